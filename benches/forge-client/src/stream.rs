//! A stream's two pipes as a client holds them, whichever way it was opened (a pool's process or the daemon).
use std::fs::File;
use std::io::BufReader;

/// A stream's two pipes, seen from the client: requests go into `input`, answers come out of `output`.
pub struct Stream {
    pub input: File,
    pub output: BufReader<File>,
}
