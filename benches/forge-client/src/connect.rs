//! A `cat-blobd connect` in-process, as forge-node.py's `connect_daemon`: our pipes and the repository's directory
//! passed to the daemon over its socket (SCM_RIGHTS), so no process starts per connection on either side.

use crate::stream::Stream;
use anyhow::{Context, Result, bail, ensure};
use rustix::fs::{Mode, OFlags};
use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use rustix::pipe::PipeFlags;
use std::fs::File;
use std::io::{BufReader, ErrorKind, IoSlice, Read};
use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

pub const MAGIC: &[u8] = b"\0cat-blobd connect 3\n";
/// In the hello's list of what each passed fd is: the client's working directory.
pub const CWD_FD: i32 = -1;
pub const FDS: usize = 4;

/// The hello after the magic, as the script packs it: 4 fds (stdin, stdout, stderr, the directory), umask 022,
/// `cat-file` and its flags, no environment.
pub fn hello(check: bool) -> Vec<u8> {
    let args: &[&[u8]] =
        if check { &[b"cat-file", b"--batch-check"] } else { &[b"cat-file", b"--batch-command", b"--buffer"] };
    let mut hello = MAGIC.to_vec();
    hello.push(FDS as u8);
    for fd in [0i32, 1, 2, CWD_FD] {
        hello.extend_from_slice(&fd.to_le_bytes());
    }
    hello.extend_from_slice(&0o022u32.to_le_bytes());
    hello.extend_from_slice(&(args.len() as u32).to_le_bytes());
    for arg in args {
        hello.extend_from_slice(&(arg.len() as u32).to_le_bytes());
        hello.extend_from_slice(arg);
    }
    hello.extend_from_slice(&0u32.to_le_bytes());
    hello
}

pub fn connect(socket: &Path, repo: &Path, check: bool) -> Result<(UnixStream, Stream)> {
    let (in_r, in_w) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC)?;
    let (out_r, out_w) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC)?;
    let cwd = rustix::fs::open(repo, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .with_context(|| format!("opening {}", repo.display()))?;
    let conn = connect_socket(socket)?;
    let hello = hello(check);
    let stderr = std::io::stderr();
    let fds = [in_r.as_fd(), out_w.as_fd(), stderr.as_fd(), cwd.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    ensure!(control.push(SendAncillaryMessage::ScmRights(&fds)), "no room for the fds");
    let sent = rustix::net::sendmsg(&conn, &[IoSlice::new(&hello)], &mut control, SendFlags::empty())?;
    ensure!(sent == hello.len(), "the hello went out in part ({sent} of {} bytes)", hello.len());
    // Our copies of the daemon's ends (and the directory) close here: only the daemon holds them now.
    drop((in_r, out_w, cwd));
    Ok((conn, Stream { input: File::from(in_w), output: BufReader::new(File::from(out_r)) }))
}

/// Retried as the script does: the daemon may be between creating its socket and listening on it.
fn connect_socket(socket: &Path) -> Result<UnixStream> {
    for _ in 0..1000 {
        match UnixStream::connect(socket) {
            Ok(conn) => return Ok(conn),
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionRefused | ErrorKind::NotFound) => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e).with_context(|| format!("connecting to {}", socket.display())),
        }
    }
    bail!("{} refused every connection", socket.display())
}

/// The end of a connection: stdin closed, stdout read to its end, and the daemon's reply read: `exit 0`.
pub fn finish(mut conn: UnixStream, stream: Stream) -> Result<()> {
    let Stream { input, mut output } = stream;
    drop(input);
    let mut rest = Vec::new();
    output.read_to_end(&mut rest)?;
    // As the script's `conn.recv(64)`: the reply line, not the daemon's close of the connection.
    let (mut reply, mut buf) = (Vec::new(), [0u8; 64]);
    while !reply.ends_with(b"\n") {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&buf[..n]);
    }
    ensure!(reply == b"exit 0\n", "the daemon replied {:?}", String::from_utf8_lossy(&reply));
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The layout forge-node.py's `connect_daemon` packs (struct "<B", "<4i", "<I" ...), byte for byte.
    #[test]
    fn hello_as_the_script_packs_it() {
        let mut want = b"\0cat-blobd connect 3\n\x04".to_vec();
        want.extend_from_slice(b"\0\0\0\0\x01\0\0\0\x02\0\0\0\xff\xff\xff\xff");
        want.extend_from_slice(b"\x12\0\0\0\x02\0\0\0\x08\0\0\0cat-file\x0d\0\0\0--batch-check\0\0\0\0");
        assert_eq!(super::hello(true), want);
    }
}
