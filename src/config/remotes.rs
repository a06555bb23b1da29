//! The branch and remote settings git's `remote.c` reads for `@{upstream}` and `@{push}` (`handle_config`,
//! v2.55.0): `branch.<name>.{remote,pushRemote,merge}`, `remote.<name>.{fetch,push,mirror}`,
//! `remote.pushDefault` and `push.default`. The legacy `.git/remotes/` and `.git/branches/` files are not read.
use std::collections::BTreeMap;

/// `branch.<name>.*`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BranchConfig {
    /// `branch.<name>.remote` (the last one set).
    pub remote: Option<Vec<u8>>,
    /// `branch.<name>.pushRemote`.
    pub push_remote: Option<Vec<u8>>,
    /// Every `branch.<name>.merge`, in order (git uses the first).
    pub merge: Vec<Vec<u8>>,
}

/// `remote.<name>.*`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteConfig {
    /// `remote.<name>.fetch`, as written.
    pub fetch: Vec<Vec<u8>>,
    /// `remote.<name>.push`, as written.
    pub push: Vec<Vec<u8>>,
    /// `remote.<name>.mirror`.
    pub mirror: bool,
}

/// `push.default` (git's `enum push_default_type`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PushDefault {
    Nothing,
    Matching,
    Current,
    /// `upstream`, or its old name `tracking`.
    Upstream,
    /// `simple`, or not set.
    #[default]
    Simple,
}

/// Every branch and remote configured, by name (subsection names are case-sensitive, as in git).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemotesConfig {
    pub branches: BTreeMap<Vec<u8>, BranchConfig>,
    /// The remotes, in the order git first met them (git defaults to the only one when there is one).
    pub remotes: Vec<(Vec<u8>, RemoteConfig)>,
    /// `remote.pushDefault`.
    pub push_remote: Option<Vec<u8>>,
    pub push_default: PushDefault,
}

impl RemotesConfig {
    /// The settings in `config`, later values overriding earlier ones as git's callbacks do.
    pub fn read(config: &gix_config::File) -> RemotesConfig {
        let mut read = RemotesConfig::default();
        for section in config.sections() {
            let header = section.header();
            let name = header.name();
            let Some(sub) = header.subsection_name().filter(|sub| !sub.is_empty()) else {
                if name.eq_ignore_ascii_case(b"remote") {
                    read.push_remote = section.value("pushDefault").map(|v| v.to_vec()).or(read.push_remote);
                } else if name.eq_ignore_ascii_case(b"push")
                    && let Some(value) = section.value("default")
                {
                    read.push_default = push_default(&value).unwrap_or(read.push_default);
                }
                continue;
            };
            if name.eq_ignore_ascii_case(b"branch") {
                let branch = read.branches.entry(sub.to_vec()).or_default();
                branch.remote = section.value("remote").map(|v| v.to_vec()).or(branch.remote.take());
                branch.push_remote = section.value("pushRemote").map(|v| v.to_vec()).or(branch.push_remote.take());
                branch.merge.extend(section.values("merge").into_iter().map(|v| v.to_vec()));
            } else if name.eq_ignore_ascii_case(b"remote") {
                let at = match read.remotes.iter().position(|(name, _)| name.as_slice() == sub.as_ref() as &[u8]) {
                    Some(at) => at,
                    None => {
                        read.remotes.push((sub.to_vec(), RemoteConfig::default()));
                        read.remotes.len() - 1
                    }
                };
                let remote = &mut read.remotes[at].1;
                remote.fetch.extend(section.values("fetch").into_iter().map(|v| v.to_vec()));
                remote.push.extend(section.values("push").into_iter().map(|v| v.to_vec()));
                if let Some(mirror) = section.value_implicit("mirror") {
                    remote.mirror = match mirror {
                        None => true,
                        Some(value) => {
                            gix_config::Boolean::try_from(gix_object::bstr::BStr::new(&value)).is_ok_and(|b| b.0)
                        }
                    };
                }
            }
        }
        read
    }

    /// The remote named `name`, if configured.
    pub fn remote(&self, name: &[u8]) -> Option<&RemoteConfig> {
        self.remotes.iter().find(|(remote, _)| remote.as_slice() == name).map(|(_, remote)| remote)
    }
}

/// git's `git_default_push_config` reading of `push.default`; `None` for a value it does not know.
fn push_default(value: &[u8]) -> Option<PushDefault> {
    Some(match value {
        b"nothing" => PushDefault::Nothing,
        b"matching" => PushDefault::Matching,
        b"current" => PushDefault::Current,
        b"upstream" | b"tracking" => PushDefault::Upstream,
        b"simple" => PushDefault::Simple,
        _ => return None,
    })
}
