//! Object content as responses and the cache share it: bytes on the heap, or a stretch of a file mapped read-only
//! (a stream blob spilled to disk), so that serving a spilled blob costs no allocation of its length.
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// Object content, shared between the cache and responses without copying.
#[derive(Clone, Default)]
pub struct Data(Bytes);

#[derive(Clone)]
enum Bytes {
    Heap(Arc<Vec<u8>>),
    Mapped(Arc<memmap2::Mmap>),
}

impl Default for Bytes {
    fn default() -> Self {
        Bytes::Heap(Arc::default())
    }
}

impl Data {
    pub fn new(bytes: Vec<u8>) -> Data {
        Data(Bytes::Heap(Arc::new(bytes)))
    }

    /// Content that is a read-only mapping; the caller vouches that its bytes never change while mapped.
    pub(crate) fn mapped(map: memmap2::Mmap) -> Data {
        Data(Bytes::Mapped(Arc::new(map)))
    }

    /// Whether the bytes are a mapping of a file rather than a copy.
    #[cfg(test)]
    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self.0, Bytes::Mapped(_))
    }

    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Bytes::Heap(bytes) => bytes,
            Bytes::Mapped(map) => map,
        }
    }
}

impl Deref for Data {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for Data {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl From<Vec<u8>> for Data {
    fn from(bytes: Vec<u8>) -> Data {
        Data::new(bytes)
    }
}

impl fmt::Debug for Data {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_slice(), f)
    }
}

impl PartialEq for Data {
    fn eq(&self, other: &Data) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Data {}
