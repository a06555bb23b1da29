//! Bytes in and out of file descriptors, for every module that reads a command stream or writes to an fd: the
//! line reader of the input side ([`line_reader`]), the gather-writer of the output side ([`writev`]), and the one
//! way to borrow an fd by its number ([`fd`]). It knows nothing of what the bytes mean.
pub mod fd;
pub(crate) mod line_reader;
pub mod writev;
