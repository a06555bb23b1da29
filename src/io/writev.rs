//! The gather-writer: the only code that writes responses to the frontend, with as few `writev(2)` calls as the
//! kernel allows and without copying a payload byte.
//!
//! The caller hands [`GatherWriter::write_all`] every response that is ready (usually three slices each: header,
//! payload, `"\n"`). Normally that is one `writev` call. More calls happen only when the kernel takes part of the
//! bytes (the next call starts exactly where it stopped), when a call is interrupted (`EINTR`, retried), when a
//! non-blocking fd is full (`EAGAIN`: wait with `poll(POLLOUT)`, then retry), or when the slices exceed what one
//! call may carry ([`IOV_MAX`] iovecs, [`MAX_IO_SIZE`] bytes).
use std::io::{self, ErrorKind, IoSlice};
use std::mem;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Arc;

use rustix::event::{PollFd, PollFlags};
use rustix::io::Errno;

use crate::git_compat::strerror::strerror;

/// Most iovecs one `writev(2)` accepts; above it the call fails with `EINVAL` instead of writing a prefix.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub const IOV_MAX: usize = libc::UIO_MAXIOV as usize;
/// Most iovecs one `writev(2)` accepts; above it the call fails with `EINVAL` instead of writing a prefix.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub const IOV_MAX: usize = 1024;

/// Most bytes offered to one `writev(2)` call: Linux's `MAX_RW_COUNT` (`INT_MAX` rounded down to a page), the
/// most it transfers in one call anyway. It also stays below `INT_MAX`, where macOS fails with `EINVAL` (the bug
/// that made git cap its own `xwrite` at `MAX_IO_SIZE`, 8 MiB there).
pub const MAX_IO_SIZE: usize = 0x7fff_f000;

/// Where gathered bytes go: a file descriptor in production, a double in tests.
pub trait Sink {
    /// One `writev(2)`-like call. It may take fewer bytes than offered.
    fn writev(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize>;
    /// Block until the sink can take more bytes (after `EAGAIN`/`WouldBlock`).
    fn wait_writable(&mut self) -> io::Result<()>;
}

/// Where responses go: a file descriptor, borrowed for as long as the sink lives (so the compiler checks that
/// whoever owns it keeps it open), or owned by the sink, or none at all.
///
/// "None" is an fd number that was not open when the stream named it: like git, that is reported by the first
/// write (`EBADF`), not up front.
#[derive(Debug)]
pub enum OutFd<'fd> {
    Borrowed(BorrowedFd<'fd>),
    Owned(OwnedFd),
    NotOpen,
}

impl OutFd<'_> {
    /// A duplicate of this process's fd `number` (what `--cat-blob-fd=<number>` names in a one-shot run), or
    /// [`OutFd::NotOpen`] if no such fd is open. The duplicate shares the open file with `number`, so writing to it
    /// is writing to `number`; owning it means nothing else can close it while the sink writes.
    #[allow(unsafe_code)]
    pub fn dup_of_process_fd(number: RawFd) -> OutFd<'static> {
        // SAFETY: the borrow lasts for the one `fcntl` call below, which cannot close the fd.
        let Some(fd) = (unsafe { super::fd::borrow_if_open(number) }) else {
            return OutFd::NotOpen;
        };
        match rustix::io::fcntl_dupfd_cloexec(fd, 3) {
            Ok(owned) => OutFd::Owned(owned),
            Err(_) => OutFd::NotOpen,
        }
    }

    fn as_fd(&self) -> io::Result<BorrowedFd<'_>> {
        match self {
            OutFd::Borrowed(fd) => Ok(*fd),
            OutFd::Owned(fd) => Ok(fd.as_fd()),
            OutFd::NotOpen => Err(Errno::BADF.into()),
        }
    }
}

impl<'fd> From<BorrowedFd<'fd>> for OutFd<'fd> {
    fn from(fd: BorrowedFd<'fd>) -> Self {
        OutFd::Borrowed(fd)
    }
}

impl<'fd> From<Option<BorrowedFd<'fd>>> for OutFd<'fd> {
    fn from(fd: Option<BorrowedFd<'fd>>) -> Self {
        fd.map_or(OutFd::NotOpen, OutFd::Borrowed)
    }
}

/// A file descriptor as a [`Sink`].
#[derive(Debug)]
pub struct FdSink<'fd> {
    fd: OutFd<'fd>,
}

impl<'fd> FdSink<'fd> {
    pub fn new(fd: impl Into<OutFd<'fd>>) -> Self {
        FdSink { fd: fd.into() }
    }

    fn fd(&self) -> io::Result<BorrowedFd<'_>> {
        self.fd.as_fd()
    }

    /// If the fd is a pipe with a smaller buffer, asks the kernel for `size` bytes, capped by
    /// `/proc/sys/fs/pipe-max-size`; returns the buffer size in effect. Best effort: a pipe that cannot grow,
    /// or an fd that is not a pipe, stays as it is. A bigger pipe means fewer, larger writes and fewer
    /// context switches with the reader.
    pub fn grow_pipe(&self, size: usize) -> Option<usize> {
        let fd = self.fd().ok()?;
        let current = rustix::pipe::fcntl_getpipe_size(fd).ok()?;
        let wanted = size.min(pipe_max_size().unwrap_or(size));
        if current >= wanted {
            return Some(current);
        }
        rustix::pipe::fcntl_setpipe_size(fd, wanted).ok().or(Some(current))
    }
}

/// `/proc/sys/fs/pipe-max-size`, read once: a daemon grows the pipe of every connection it serves.
fn pipe_max_size() -> Option<usize> {
    static MAX: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| std::fs::read_to_string("/proc/sys/fs/pipe-max-size").ok().and_then(|s| s.trim().parse().ok()))
}

impl Sink for FdSink<'_> {
    fn writev(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        Ok(rustix::io::writev(self.fd()?, bufs)?)
    }

    fn wait_writable(&mut self) -> io::Result<()> {
        let fd = self.fd()?;
        let mut fds = [PollFd::new(&fd, PollFlags::OUT)];
        loop {
            // POLLERR/POLLHUP also end the wait: the next writev then reports the real error (EPIPE, ...).
            match rustix::event::poll(&mut fds, None) {
                Ok(_) => return Ok(()),
                Err(Errno::INTR) => continue,
                Err(err) => return Err(err.into()),
            }
        }
    }
}

/// Writing to the frontend failed; the stream cannot go on.
///
/// The message already contains the OS error text, so the `io::Error` is not also exposed as `source()` (an error
/// chain would print it twice); use [`WriteError::io_error`] to inspect it.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("write to frontend failed: {}", strerror(.0))]
    Io(io::Error),
    /// A response written in pieces ([`super::encode::Response::Streamed`]) met damage after its first piece
    /// was out: the stream ends there, as git's does.
    #[error(transparent)]
    Source(Arc<crate::store::ReadError>),
}

impl WriteError {
    /// The frontend closed its end (`EPIPE`): usually it just stopped reading, which callers report quietly.
    pub fn is_broken_pipe(&self) -> bool {
        self.io_error().is_some_and(|err| err.kind() == ErrorKind::BrokenPipe)
    }

    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            WriteError::Io(err) => Some(err),
            WriteError::Source(_) => None,
        }
    }
}

/// Writes gathered responses to a [`Sink`], counting the calls it makes.
pub struct GatherWriter<S: Sink> {
    sink: S,
    syscalls: u64,
    /// Always empty between calls. Holds the iovecs of a call whose last slice must be cut to [`MAX_IO_SIZE`]; kept
    /// only for its allocation. It is `'static` because a struct cannot name the lifetime of the caller's slices:
    /// an empty `Vec<IoSlice<'static>>` becomes a `Vec<IoSlice<'a>>` by covariance, and [`recycle`] turns it back.
    scratch: Vec<IoSlice<'static>>,
}

/// What one call carries: the first `iovecs` slices, `bytes` bytes in all, the last slice cut to `cut` bytes if set.
#[derive(Debug, PartialEq, Eq)]
struct Batch {
    iovecs: usize,
    bytes: usize,
    cut: Option<usize>,
}

/// The longest prefix of `bufs` one call may carry: at most `max_iovecs` slices and `max_bytes` bytes. The slice
/// that crosses `max_bytes` is cut (rather than left for the next call) so a response's header and payload still
/// go out together. `bufs[0]` must not be empty, which makes `bytes` non-zero.
fn next_batch(bufs: &[IoSlice<'_>], max_iovecs: usize, max_bytes: usize) -> Batch {
    let mut bytes = 0;
    for (i, buf) in bufs.iter().take(max_iovecs).enumerate() {
        // `bytes < max_bytes` here: the loop stops as soon as it reaches the limit.
        let room = max_bytes - bytes;
        if buf.len() > room {
            return Batch { iovecs: i + 1, bytes: max_bytes, cut: Some(room) };
        }
        bytes += buf.len();
        if bytes == max_bytes {
            return Batch { iovecs: i + 1, bytes, cut: None };
        }
    }
    Batch { iovecs: bufs.len().min(max_iovecs), bytes, cut: None }
}

/// Gives an emptied iovec array's allocation back for the next call with other lifetimes. The `map` never runs;
/// `collect` from a `Vec`'s own iterator into a same-layout element type reuses the allocation (std's in-place
/// iteration). Should that ever stop, this is still correct and merely returns an unallocated `Vec`.
fn recycle(mut iovecs: Vec<IoSlice<'_>>) -> Vec<IoSlice<'static>> {
    iovecs.clear();
    iovecs.into_iter().map(|_| -> IoSlice<'static> { unreachable!("the Vec was cleared") }).collect()
}

impl<S: Sink> GatherWriter<S> {
    pub fn new(sink: S) -> Self {
        GatherWriter { sink, syscalls: 0, scratch: Vec::new() }
    }

    /// Writes every byte of `bufs` (one or more whole responses) before returning.
    ///
    /// `bufs` is the cursor: slices are advanced as the kernel takes bytes, so afterwards its contents are
    /// unspecified. Payloads are never copied; neither are the iovecs, except when a call must be cut at
    /// [`MAX_IO_SIZE`].
    pub fn write_all(&mut self, bufs: &mut [IoSlice<'_>]) -> Result<(), WriteError> {
        self.write_all_limited(bufs, IOV_MAX, MAX_IO_SIZE)
    }

    /// [`Self::write_all`] with the per-call limits as parameters, so tests can use small ones.
    fn write_all_limited(
        &mut self,
        mut bufs: &mut [IoSlice<'_>],
        max_iovecs: usize,
        max_bytes: usize,
    ) -> Result<(), WriteError> {
        debug_assert!(max_iovecs > 0 && max_bytes > 0);
        loop {
            // Drop what was written and any empty slices in front: the call must start with a byte to write, or
            // a run of empty slices longer than `max_iovecs` would make a call that writes 0 bytes.
            IoSlice::advance_slices(&mut bufs, 0);
            if bufs.is_empty() {
                return Ok(());
            }
            let batch = next_batch(bufs, max_iovecs, max_bytes);
            let result = match batch.cut {
                // The usual case: the caller's own array, or a prefix of it.
                None => self.sink.writev(&bufs[..batch.iovecs]),
                Some(cut) => {
                    let last = batch.iovecs - 1;
                    let mut iovecs: Vec<IoSlice<'_>> = mem::take(&mut self.scratch);
                    iovecs.extend_from_slice(&bufs[..last]);
                    iovecs.push(IoSlice::new(&bufs[last][..cut]));
                    let result = self.sink.writev(&iovecs);
                    self.scratch = recycle(iovecs);
                    result
                }
            };
            self.syscalls += 1;
            match result {
                Ok(0) => {
                    // A sink that takes nothing and reports no error would make this loop forever.
                    return Err(WriteError::Io(io::Error::new(ErrorKind::WriteZero, "failed to write whole buffer")));
                }
                Ok(written) if written > batch.bytes => {
                    return Err(WriteError::Io(io::Error::other(format!(
                        "writev reported {written} bytes written of {} offered",
                        batch.bytes
                    ))));
                }
                Ok(written) => IoSlice::advance_slices(&mut bufs, written),
                Err(err) if err.kind() == ErrorKind::Interrupted => {}
                Err(err) if err.kind() == ErrorKind::WouldBlock => {
                    self.sink.wait_writable().map_err(WriteError::Io)?;
                }
                Err(err) => return Err(WriteError::Io(err)),
            }
        }
    }

    /// How many `writev` calls were made, including ones that failed or were retried.
    pub fn syscalls(&self) -> u64 {
        self.syscalls
    }

    pub fn sink(&self) -> &S {
        &self.sink
    }

    pub fn into_inner(self) -> S {
        self.sink
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::fs::File;
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::sync::mpsc;
    use std::time::Duration;

    /// One call seen by [`Double`].
    #[derive(Debug, Clone, Copy)]
    struct Call {
        iovecs: usize,
        offered: usize,
    }

    /// A sink that takes at most `per_call` bytes per call, answers with queued errors first, and records calls.
    struct Double {
        per_call: usize,
        /// Keep the bytes written; off for the multi-GiB test, which only counts them.
        keep: bool,
        out: Vec<u8>,
        accepted: usize,
        calls: Vec<Call>,
        errors: VecDeque<ErrorKind>,
        waits: usize,
    }

    impl Double {
        fn new(per_call: usize) -> Self {
            Double {
                per_call,
                keep: true,
                out: Vec::new(),
                accepted: 0,
                calls: Vec::new(),
                errors: VecDeque::new(),
                waits: 0,
            }
        }
    }

    impl Sink for Double {
        fn writev(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            let offered = bufs.iter().map(|b| b.len()).sum();
            self.calls.push(Call { iovecs: bufs.len(), offered });
            if let Some(kind) = self.errors.pop_front() {
                return Err(kind.into());
            }
            let mut left = self.per_call;
            let mut taken = 0;
            for buf in bufs {
                let n = buf.len().min(left);
                if self.keep {
                    self.out.extend_from_slice(&buf[..n]);
                }
                taken += n;
                left -= n;
                if left == 0 {
                    break;
                }
            }
            self.accepted += taken;
            Ok(taken)
        }

        fn wait_writable(&mut self) -> io::Result<()> {
            self.waits += 1;
            Ok(())
        }
    }

    /// Payload bytes that vary and include NULs, so a skipped or repeated byte shows.
    fn payload(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    /// cat-blob responses (header, payload, LF) for payloads of 0 bytes, 5 bytes and 100 KiB.
    fn responses() -> Vec<[Vec<u8>; 3]> {
        [0, 5, 100 * 1024]
            .into_iter()
            .enumerate()
            .map(|(i, len)| [format!("{i:040x} blob {len}\n").into_bytes(), payload(len), b"\n".to_vec()])
            .collect()
    }

    fn slices(responses: &[[Vec<u8>; 3]]) -> Vec<IoSlice<'_>> {
        responses.iter().flatten().map(|part| IoSlice::new(part)).collect()
    }

    fn concat(responses: &[[Vec<u8>; 3]]) -> Vec<u8> {
        responses.iter().flatten().flatten().copied().collect()
    }

    /// Compares byte streams without dumping megabytes when they differ.
    fn assert_same_bytes(got: &[u8], want: &[u8]) {
        if got != want {
            let first = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
            panic!("byte streams differ: got {} bytes, want {}, first difference at {first}", got.len(), want.len());
        }
    }

    #[test]
    fn short_writes_continue_exactly_where_they_stopped() {
        let responses = responses();
        let want = concat(&responses);
        for per_call in [1, 7, 4096] {
            let mut writer = GatherWriter::new(Double::new(per_call));
            writer.write_all(&mut slices(&responses)).unwrap();
            let sink = writer.sink();
            assert_same_bytes(&sink.out, &want);
            assert_eq!(sink.calls.len(), want.len().div_ceil(per_call), "calls with {per_call} bytes per call");
            assert_eq!(writer.syscalls(), sink.calls.len() as u64);
        }
    }

    #[test]
    fn everything_ready_goes_out_in_one_call() {
        let responses = responses();
        let mut writer = GatherWriter::new(Double::new(usize::MAX));
        writer.write_all(&mut slices(&responses)).unwrap();
        assert_same_bytes(&writer.sink().out, &concat(&responses));
        assert_eq!(writer.sink().calls.len(), 1);
        assert_eq!(writer.syscalls(), 1);
    }

    #[test]
    fn interrupted_is_retried_and_would_block_waits_then_retries() {
        let responses = responses();
        let mut double = Double::new(7);
        double.errors.extend([ErrorKind::Interrupted, ErrorKind::WouldBlock]);
        let mut writer = GatherWriter::new(double);
        writer.write_all(&mut slices(&responses)).unwrap();
        let sink = writer.into_inner();
        assert_same_bytes(&sink.out, &concat(&responses));
        assert_eq!(sink.waits, 1);
        assert!(sink.errors.is_empty());
    }

    #[test]
    fn other_errors_end_the_write() {
        let mut double = Double::new(usize::MAX);
        double.errors.push_back(ErrorKind::BrokenPipe);
        let mut writer = GatherWriter::new(double);
        let err = writer.write_all(&mut [IoSlice::new(b"x")]).unwrap_err();
        assert!(err.is_broken_pipe());
        assert_eq!(writer.sink().calls.len(), 1);
    }

    #[test]
    fn a_call_that_writes_nothing_is_an_error_not_a_loop() {
        let mut writer = GatherWriter::new(Double::new(0));
        let err = writer.write_all(&mut [IoSlice::new(b"abc")]).unwrap_err();
        assert_eq!(err.io_error().map(io::Error::kind), Some(ErrorKind::WriteZero));
        assert!(!err.is_broken_pipe());
        assert_eq!(writer.syscalls(), 1);
    }

    #[test]
    fn nothing_to_write_makes_no_call() {
        let mut writer = GatherWriter::new(Double::new(usize::MAX));
        writer.write_all(&mut []).unwrap();
        writer.write_all(&mut [IoSlice::new(b""), IoSlice::new(&[])]).unwrap();
        assert_eq!(writer.syscalls(), 0);
        assert!(writer.sink().calls.is_empty());
    }

    #[test]
    fn next_batch_respects_both_limits_and_cuts_the_crossing_slice() {
        let bufs = [b"aaaa".as_slice(), b"bb", b"cccccc"].map(IoSlice::new);
        let batch = |iovecs, bytes, cut| Batch { iovecs, bytes, cut };
        assert_eq!(next_batch(&bufs, 10, 100), batch(3, 12, None));
        assert_eq!(next_batch(&bufs, 2, 100), batch(2, 6, None));
        assert_eq!(next_batch(&bufs, 10, 6), batch(2, 6, None));
        assert_eq!(next_batch(&bufs, 10, 9), batch(3, 9, Some(3)));
        assert_eq!(next_batch(&bufs, 10, 3), batch(1, 3, Some(3)));
        assert_eq!(next_batch(&bufs, 1, 3), batch(1, 3, Some(3)));
    }

    #[test]
    fn small_limits_split_calls_without_losing_a_byte() {
        let responses = responses();
        let want = concat(&responses);
        // Leading and inner runs of empty slices longer than the iovec limit must not become 0-byte calls.
        let empty: Vec<IoSlice<'_>> = vec![IoSlice::new(b""); 10];
        for (max_iovecs, max_bytes, per_call) in
            [(2, 5, usize::MAX), (1, 1000, usize::MAX), (3, 4099, 4096), (4, 64, 7)]
        {
            let mut bufs = empty.clone();
            for response in &responses {
                bufs.extend(response.iter().map(|part| IoSlice::new(part)));
                bufs.extend_from_slice(&empty);
            }
            let mut writer = GatherWriter::new(Double::new(per_call));
            writer.write_all_limited(&mut bufs, max_iovecs, max_bytes).unwrap();
            let sink = writer.sink();
            assert_same_bytes(&sink.out, &want);
            for call in &sink.calls {
                assert!(call.iovecs <= max_iovecs, "{call:?} over {max_iovecs} iovecs");
                assert!(call.offered <= max_bytes, "{call:?} over {max_bytes} bytes");
                assert!(call.offered > 0, "{call:?} offers nothing");
            }
        }
    }

    #[test]
    fn no_call_gets_more_than_iov_max_iovecs() {
        // 3000 one-byte slices, all different, as from 1000 tiny responses.
        let bytes: Vec<u8> = (0..3000).map(|i| (i % 256) as u8).collect();
        let mut bufs: Vec<IoSlice<'_>> = bytes.chunks(1).map(IoSlice::new).collect();
        let mut writer = GatherWriter::new(Double::new(usize::MAX));
        writer.write_all(&mut bufs).unwrap();
        let sink = writer.sink();
        assert_same_bytes(&sink.out, &bytes);
        let iovecs: Vec<usize> = sink.calls.iter().map(|c| c.iovecs).collect();
        assert_eq!(iovecs, [IOV_MAX, IOV_MAX, 3000 - 2 * IOV_MAX]);
    }

    #[test]
    fn no_call_gets_more_than_max_io_size_bytes() {
        // 600 slices of one 4 MiB buffer: 2.4 GiB offered, no more than 4 MiB allocated.
        let chunk = vec![0u8; 4 << 20];
        let mut bufs: Vec<IoSlice<'_>> = vec![IoSlice::new(&chunk); 600];
        let total = 600 * chunk.len();
        let mut double = Double::new(usize::MAX);
        double.keep = false;
        let mut writer = GatherWriter::new(double);
        writer.write_all(&mut bufs).unwrap();
        let sink = writer.sink();
        assert_eq!(sink.accepted, total);
        let offered: Vec<usize> = sink.calls.iter().map(|c| c.offered).collect();
        assert_eq!(offered, [MAX_IO_SIZE, total - MAX_IO_SIZE]);
        // The first call ends inside a slice, which was cut rather than left for the next call.
        assert_eq!(sink.calls[0].iovecs, MAX_IO_SIZE.div_ceil(chunk.len()));
        assert!(sink.calls.iter().all(|c| c.iovecs <= IOV_MAX));
        // The cut call's iovec array stays allocated for the next one (see `recycle`).
        assert!(writer.scratch.is_empty() && writer.scratch.capacity() > 0);
    }

    /// Wraps [`FdSink`] to count the calls that found the pipe full, and tells the reader when the first one did.
    struct CountingFdSink {
        inner: FdSink<'static>,
        would_block: usize,
        full: Option<mpsc::Sender<()>>,
    }

    impl Sink for CountingFdSink {
        fn writev(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            let result = self.inner.writev(bufs);
            if matches!(&result, Err(err) if err.kind() == ErrorKind::WouldBlock) {
                self.would_block += 1;
                if let Some(full) = self.full.take() {
                    let _ = full.send(());
                }
            }
            result
        }

        fn wait_writable(&mut self) -> io::Result<()> {
            self.inner.wait_writable()
        }
    }

    #[test]
    fn a_full_non_blocking_pipe_waits_for_a_slow_reader() {
        let (read_end, write_end) = rustix::pipe::pipe().unwrap();
        rustix::fs::fcntl_setfl(&write_end, rustix::fs::OFlags::NONBLOCK).unwrap();
        let (full_tx, full_rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            // Start reading once the writer has found the pipe full, so it does hit EAGAIN (a pipe holds 64 KiB by
            // default, far less than the response). The timeout only keeps a broken writer from hanging the test.
            let _ = full_rx.recv_timeout(Duration::from_secs(30));
            let mut pipe = File::from(read_end);
            let mut got = Vec::new();
            let mut chunk = [0u8; 16 * 1024];
            loop {
                match pipe.read(&mut chunk).unwrap() {
                    0 => return got,
                    n => got.extend_from_slice(&chunk[..n]),
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        });

        let big = 1024 * 1024 + 3;
        let responses = [
            [format!("{:040x} blob {big}\n", 1).into_bytes(), payload(big), b"\n".to_vec()],
            [format!("{:040x} blob 5\n", 2).into_bytes(), payload(5), b"\n".to_vec()],
        ];
        let sink = CountingFdSink {
            inner: FdSink::new(OutFd::Owned(write_end.try_clone().unwrap())),
            would_block: 0,
            full: Some(full_tx),
        };
        let mut writer = GatherWriter::new(sink);
        writer.write_all(&mut slices(&responses)).unwrap();
        let would_block = writer.sink().would_block;
        drop(writer);
        drop(write_end); // EOF for the reader.

        assert_same_bytes(&reader.join().unwrap(), &concat(&responses));
        assert!(would_block >= 1, "the writer never found the pipe full");
    }

    #[test]
    fn an_fd_that_is_not_open_reports_bad_file_descriptor() {
        // Linux caps fd numbers below fs.nr_open (at most 2^30), so this one is never open. A number closed just
        // before could be reused at once by a test running on another thread.
        for fd in [RawFd::MAX, -1] {
            let mut writer = GatherWriter::new(FdSink::new(OutFd::dup_of_process_fd(fd)));
            let err = writer.write_all(&mut [IoSlice::new(b"x\n")]).unwrap_err();
            assert_eq!(err.to_string(), "write to frontend failed: Bad file descriptor");
            assert!(!err.is_broken_pipe());
        }
    }

    #[test]
    fn a_process_fd_is_written_through_its_duplicate() {
        let (read_end, write_end) = rustix::pipe::pipe().unwrap();
        let mut writer = GatherWriter::new(FdSink::new(OutFd::dup_of_process_fd(write_end.as_raw_fd())));
        drop(write_end);
        writer.write_all(&mut [IoSlice::new(b"through the dup\n")]).unwrap();
        drop(writer);
        let mut got = Vec::new();
        File::from(read_end).read_to_end(&mut got).unwrap();
        assert_eq!(got, b"through the dup\n");
    }

    #[test]
    fn a_reader_that_went_away_is_a_broken_pipe() {
        // The test harness, like any Rust program, starts with SIGPIPE ignored, so the write fails with EPIPE.
        let (read_end, write_end) = rustix::pipe::pipe().unwrap();
        drop(read_end);
        let mut writer = GatherWriter::new(FdSink::new(write_end.as_fd()));
        let err =
            writer.write_all(&mut [IoSlice::new(b"hdr\n"), IoSlice::new(b"data"), IoSlice::new(b"\n")]).unwrap_err();
        assert!(err.is_broken_pipe());
        assert_eq!(err.to_string(), "write to frontend failed: Broken pipe");
    }
}
