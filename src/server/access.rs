//! Whether a peer's uid may connect, and what a peer of another uid may not ask for (who the peer is comes from
//! [`crate::wire::peer`]).

/// The daemon's own uid, and the others `--allow-uid` admits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Access {
    pub server_uid: u32,
    pub allowed_uids: Vec<u32>,
}

impl Access {
    /// The uid this process runs as, plus `allowed_uids`.
    pub(crate) fn for_this_process(allowed_uids: Vec<u32>) -> Access {
        Access { server_uid: rustix::process::geteuid().as_raw(), allowed_uids }
    }

    /// Only the daemon's own uid and the listed ones may connect (root gets no exception).
    pub(crate) fn admits(&self, uid: u32) -> bool {
        uid == self.server_uid || self.allowed_uids.contains(&uid)
    }

    /// May a stream of `uid` name files, which the daemon would read or write with its own rights? Only the
    /// daemon's own uid may; for others the stream's `feature`s and `option git`s that name files fail too.
    pub(crate) fn may_name_files(&self, uid: u32) -> bool {
        uid == self.server_uid
    }

    /// The first flag in `args` that a peer of another uid may not pass, because it would have the daemon read
    /// or write a file with the daemon's rights: marks files, submodule rewrite files, pack edges, and
    /// `--allow-unsafe-features` (which lets the stream name marks files). Same-uid peers may pass anything.
    pub(crate) fn refused_flag<'a>(&self, uid: u32, args: &'a [Vec<u8>]) -> Option<&'a [u8]> {
        if self.may_name_files(uid) {
            return None;
        }
        const FILE_FLAGS: [&[u8]; 7] = [
            b"--import-marks",
            b"--import-marks-if-exists",
            b"--export-marks",
            b"--export-pack-edges",
            b"--rewrite-submodules-from",
            b"--rewrite-submodules-to",
            b"--allow-unsafe-features",
        ];
        args.iter().map(Vec::as_slice).find(|arg| {
            let name = arg.split(|&b| b == b'=').next().unwrap_or_default();
            FILE_FLAGS.contains(&name)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_servers_uid_and_listed_uids_are_admitted() {
        let access = Access { server_uid: 1000, allowed_uids: vec![1001, 0] };
        assert!(access.admits(1000));
        assert!(access.admits(1001));
        assert!(access.admits(0));
        assert!(!access.admits(1002));
        let strict = Access { server_uid: 1000, allowed_uids: Vec::new() };
        assert!(!strict.admits(0), "root is not admitted unless listed");
        assert!(!strict.admits(65534));
    }

    #[test]
    fn other_uids_may_not_name_files() {
        let access = Access { server_uid: 1000, allowed_uids: vec![1001] };
        let args: Vec<Vec<u8>> =
            vec![b"--quiet".to_vec(), b"--cat-blob-fd=3".to_vec(), b"--export-marks=/etc/passwd".to_vec()];
        assert_eq!(access.refused_flag(1000, &args), None);
        assert_eq!(access.refused_flag(1001, &args), Some(&b"--export-marks=/etc/passwd"[..]));
        assert_eq!(access.refused_flag(1001, &args[..2]), None);
        assert!(access.refused_flag(1001, &[b"--allow-unsafe-features".to_vec()]).is_some());
        assert!(access.refused_flag(1001, &[b"--import-marks-if-exists=m".to_vec()]).is_some());
    }
}
