//! Who is on the other end of a Unix socket (SO_PEERCRED): the daemon checks its clients with it, and a client
//! checks the daemon before handing it its fds.
use std::io;
use std::os::fd::{AsFd, AsRawFd};

/// The peer's credentials as the kernel recorded them at `connect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    pub uid: u32,
    pub gid: u32,
    pub pid: i32,
}

impl Peer {
    /// The credentials of `socket`'s peer. The pid is 0 when the peer runs in a pid namespace this process
    /// cannot see, which is why this reads `struct ucred` itself: rustix's `UCred` holds the pid as a non-zero
    /// type, and would be undefined behaviour there.
    #[allow(unsafe_code)]
    pub fn of(socket: impl AsFd) -> io::Result<Peer> {
        let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: `cred` and `len` are live locals; the kernel writes at most `len` bytes into `cred`, which is a
        // plain C struct for which every bit pattern is valid, and updates `len`.
        let rc = unsafe {
            libc::getsockopt(
                socket.as_fd().as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&raw mut cred).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Peer { uid: cred.uid, gid: cred.gid, pid: cred.pid })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_of_a_socket_pair_are_our_own() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let peer = Peer::of(&a).unwrap();
        assert_eq!(peer.uid, rustix::process::geteuid().as_raw());
        assert_eq!(peer.pid, std::process::id() as i32);
    }
}
