//! `<branch>@{upstream}` and `<branch>@{push}`: the remote-tracking ref a branch merges from, or would push to,
//! as git's `branch_get_upstream` and `branch_get_push` (remote.c, v2.55.0) find it from the configuration, with
//! their messages when there is none (git dies with them, in every mode).
use crate::config::{PushDefault, RemoteConfig, RemotesConfig};
use crate::fatal::Bytes;

/// Why a branch has no upstream or push branch: git's messages.
#[derive(Debug, thiserror::Error)]
pub enum BranchError {
    #[error("HEAD does not point to a branch")]
    Detached,
    #[error("no such branch: '{}'", Bytes(.0))]
    NoSuchBranch(Vec<u8>),
    #[error("no upstream configured for branch '{}'", Bytes(.0))]
    NoUpstream(Vec<u8>),
    #[error("upstream branch '{}' not stored as a remote-tracking branch", Bytes(.0))]
    NotTracked(Vec<u8>),
    #[error("push destination '{}' on remote '{}' has no local tracking branch", Bytes(.dest), Bytes(.remote))]
    NoTrackingForPush { dest: Vec<u8>, remote: Vec<u8> },
    #[error("push refspecs for '{}' do not include '{}'", Bytes(.remote), Bytes(.branch))]
    NotInPushRefspecs { remote: Vec<u8>, branch: Vec<u8> },
    #[error("push has no destination (push.default is 'nothing')")]
    PushNothing,
    #[error("cannot resolve 'simple' push to a single destination")]
    SimpleAmbiguous,
}

/// What the branch lookups need of the repository's refs, answered by the caller.
pub(super) trait Refs {
    /// Does the full ref name `name` name an object (git's `refs_ref_exists`)?
    fn exists(&self, name: &[u8]) -> bool;
    /// The one full ref name `name` stands for by git's lookup rules, if exactly one (`repo_dwim_ref` == 1).
    fn dwim(&self, name: &[u8]) -> Option<Vec<u8>>;
}

/// Does `rest` (what follows a name) start with `@{upstream}`, `@{u}` or `@{push}`, in any case (git's
/// `upstream_mark`, `push_mark`)?
pub(super) fn mark_follows(rest: &[u8]) -> bool {
    [&b"@{upstream}"[..], b"@{u}", b"@{push}"]
        .iter()
        .any(|mark| rest.get(..mark.len()).is_some_and(|start| start.eq_ignore_ascii_case(mark)))
}

/// The full name of `branch`'s upstream (`branch`: `None` when HEAD is detached).
pub(super) fn upstream(config: &RemotesConfig, refs: &dyn Refs, branch: Option<&[u8]>) -> Result<Vec<u8>, BranchError> {
    let branch = branch.ok_or(BranchError::Detached)?;
    let settings = config.branches.get(branch);
    let (remote, merge) = match settings.map(|b| (&b.remote, b.merge.first())) {
        Some((Some(remote), Some(merge))) => (remote, merge),
        _ => {
            let refname = [&b"refs/heads/"[..], branch].concat();
            return Err(match refs.exists(&refname) {
                true => BranchError::NoUpstream(branch.to_vec()),
                false => BranchError::NoSuchBranch(branch.to_vec()),
            });
        }
    };
    // git's `set_merge`: the remote's fetch refspecs map the merged ref to a tracking ref; for the remote `.`
    // (this repository) the merged ref is itself the upstream.
    let fetch = config.remote(remote).map_or(&[][..], |r| &r.fetch[..]);
    match apply_refspecs(fetch, merge) {
        Some(tracking) => Ok(tracking),
        None if remote.as_slice() == b"." => Ok(refs.dwim(merge).unwrap_or_else(|| merge.clone())),
        None => Err(BranchError::NotTracked(merge.clone())),
    }
}

/// The full name of the remote-tracking ref `branch` would push to.
pub(super) fn push(config: &RemotesConfig, refs: &dyn Refs, branch: Option<&[u8]>) -> Result<Vec<u8>, BranchError> {
    let branch = branch.ok_or(BranchError::Detached)?;
    let settings = config.branches.get(branch);
    let remote_name = settings
        .and_then(|b| b.push_remote.as_ref())
        .or(config.push_remote.as_ref())
        .or(settings.and_then(|b| b.remote.as_ref()))
        .map_or_else(|| default_remote(config), Vec::clone);
    let empty = RemoteConfig::default();
    let remote = config.remote(&remote_name).unwrap_or(&empty);
    let refname = [&b"refs/heads/"[..], branch].concat();
    let tracking = |dest: &[u8]| {
        apply_refspecs(&remote.fetch, dest)
            .ok_or_else(|| BranchError::NoTrackingForPush { dest: dest.to_vec(), remote: remote_name.clone() })
    };
    if !remote.push.is_empty() {
        let dest = apply_refspecs(&remote.push, &refname)
            .ok_or_else(|| BranchError::NotInPushRefspecs { remote: remote_name.clone(), branch: branch.to_vec() })?;
        return tracking(&dest);
    }
    if remote.mirror {
        return tracking(&refname);
    }
    match config.push_default {
        PushDefault::Nothing => Err(BranchError::PushNothing),
        PushDefault::Matching | PushDefault::Current => tracking(&refname),
        PushDefault::Upstream => upstream(config, refs, Some(branch)),
        PushDefault::Simple => {
            let up = upstream(config, refs, Some(branch))?;
            match tracking(&refname)? == up {
                true => Ok(up),
                false => Err(BranchError::SimpleAmbiguous),
            }
        }
    }
}

/// The remote of a branch without one: the only remote configured, else `origin` (`remotes_remote_for_branch`).
fn default_remote(config: &RemotesConfig) -> Vec<u8> {
    match &config.remotes[..] {
        [(only, _)] => only.clone(),
        _ => b"origin".to_vec(),
    }
}

/// git's `apply_refspecs` (`refspec_find_match`): the destination the first refspec that maps `name` gives it,
/// unless a negative refspec (`^<pattern>`) excludes it. Refspecs without a destination map nothing.
fn apply_refspecs(refspecs: &[Vec<u8>], name: &[u8]) -> Option<Vec<u8>> {
    let parsed: Vec<Refspec<'_>> = refspecs.iter().filter_map(|spec| Refspec::parse(spec)).collect();
    if excluded(&parsed, name) {
        return None;
    }
    parsed.iter().filter(|spec| !spec.negative).find_map(|spec| spec.map(name))
}

/// git's `refspec_find_negative_match` for a query by source: it maps `name` through the positive refspecs in
/// reverse (a pattern's destination to its source; a plain refspec whose source is `name`, and the matching
/// refspec `:`, to `name`), and excludes `name` when one of those names matches a negative refspec. (So a
/// negative refspec excludes a name a pattern maps only when the name also fits the pattern's destination.)
fn excluded(parsed: &[Refspec<'_>], name: &[u8]) -> bool {
    let reversed = parsed.iter().filter(|spec| !spec.negative).filter_map(|spec| {
        if spec.is_pattern() {
            let reverse = Refspec { negative: false, src: spec.dst.unwrap_or(spec.src), dst: Some(spec.src) };
            reverse.map(name)
        } else if spec.src.is_empty() && spec.dst.is_some_and(<[u8]>::is_empty) || spec.src == name {
            Some(name.to_vec())
        } else {
            None
        }
    });
    reversed
        .collect::<Vec<_>>()
        .iter()
        .any(|candidate| parsed.iter().any(|spec| spec.negative && spec.matches(candidate)))
}

/// One refspec, as git's `parse_refspec` reads it (the parts cat-blobd needs).
struct Refspec<'a> {
    negative: bool,
    src: &'a [u8],
    dst: Option<&'a [u8]>,
}

impl<'a> Refspec<'a> {
    fn parse(spec: &'a [u8]) -> Option<Refspec<'a>> {
        let spec = spec.strip_prefix(b"+").unwrap_or(spec);
        let (negative, spec) = match spec.strip_prefix(b"^") {
            Some(rest) => (true, rest),
            None => (false, spec),
        };
        let (src, dst) = match memchr::memrchr(b':', spec) {
            Some(colon) => (&spec[..colon], Some(&spec[colon + 1..])),
            None => (spec, None),
        };
        let stars = |part: &[u8]| part.iter().filter(|&&b| b == b'*').count();
        // A pattern on one side only, or more than one `*`, is not a refspec git accepts.
        match dst {
            Some(dst) if stars(src) > 1 || stars(dst) > 1 || (stars(src) == 1) != (stars(dst) == 1) => None,
            _ => Some(Refspec { negative, src, dst }),
        }
    }

    fn is_pattern(&self) -> bool {
        memchr::memchr(b'*', self.src).is_some()
    }

    /// Does `name` match the source (git's `refspec_match`: a pattern's `*` matching anything)?
    fn matches(&self, name: &[u8]) -> bool {
        match self.is_pattern() {
            true => self.star_match(name).is_some(),
            false => self.src == name,
        }
    }

    /// What `*` stands for when the source is a pattern that `name` matches.
    fn star_match<'n>(&self, name: &'n [u8]) -> Option<&'n [u8]> {
        let star = memchr::memchr(b'*', self.src)?;
        let (prefix, suffix) = (&self.src[..star], &self.src[star + 1..]);
        (name.len() >= prefix.len() + suffix.len() && name.starts_with(prefix) && name.ends_with(suffix))
            .then(|| &name[prefix.len()..name.len() - suffix.len()])
    }

    fn map(&self, name: &[u8]) -> Option<Vec<u8>> {
        let dst = self.dst?;
        if memchr::memchr(b'*', self.src).is_some() {
            let matched = self.star_match(name)?;
            let star = memchr::memchr(b'*', dst)?;
            return Some([&dst[..star], matched, &dst[star + 1..]].concat());
        }
        (self.src == name).then(|| dst.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::apply_refspecs;

    #[test]
    fn refspecs_map_as_gits_apply_refspecs() {
        let specs = |list: &[&str]| list.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        let fetch = specs(&["+refs/heads/*:refs/remotes/origin/*", "refs/tags/v1:refs/tags/v1"]);
        assert_eq!(apply_refspecs(&fetch, b"refs/heads/a/b"), Some(b"refs/remotes/origin/a/b".to_vec()));
        assert_eq!(apply_refspecs(&fetch, b"refs/tags/v1"), Some(b"refs/tags/v1".to_vec()));
        assert_eq!(apply_refspecs(&fetch, b"main"), None);
        // git reverses a pattern before it looks for a negative match: `^refs/heads/secret` excludes what maps
        // to it backwards, not `refs/heads/secret` itself.
        let negative = specs(&["refs/heads/*:refs/r/*", "^refs/heads/secret"]);
        assert_eq!(apply_refspecs(&negative, b"refs/heads/secret"), Some(b"refs/r/secret".to_vec()));
        let both = specs(&["refs/*:refs/*", "^refs/heads/secret"]);
        assert_eq!(apply_refspecs(&both, b"refs/heads/secret"), None);
        assert_eq!(apply_refspecs(&both, b"refs/heads/open"), Some(b"refs/heads/open".to_vec()));
        let plain = specs(&["refs/heads/a:refs/r/a", "^refs/heads/a"]);
        assert_eq!(apply_refspecs(&plain, b"refs/heads/a"), None);
        assert_eq!(apply_refspecs(&specs(&["refs/heads/main"]), b"refs/heads/main"), None);
    }
}
