//! Object names as git's `get_oid_with_context` resolves them for cat-file: gix-revision parses the rev-spec
//! and calls back here; gix-ref finds references (loose, packed, symbolic, in git's lookup order); the store
//! answers abbreviated ids and reads the objects that peeling and `<rev>:<path>` walk through.
//!
//! Where gix-revision's order differs from git's, this delegate restores git's: git tries a name as a
//! reference before it tries it as an abbreviated id (gix-revision asks for the id first), and an ambiguous
//! abbreviation is resolved by what follows it, as git's disambiguators do (see `ambiguous`).
use gix_hash::{ObjectId, Prefix};
use gix_revision::spec::parse::delegate::{self, PeelTo, PrefixHint, ReflogLookup, SiblingBranch, Traversal};

use super::ambiguous::{self, Needs};
use super::error::Form;
use super::error::NameError;
use super::forms::{self, stop};
use super::symlinks::{self, Followed};
use super::syntax::{describe_output, nth_onion, rev_before_path, with_reflog_stand_in};
use super::upstream;
use super::walk;
use super::{index, reflog, search};
use crate::cat_file::output::Messages;
use crate::refs::rules as ref_rules;
use crate::store::{PrefixMatch, Resolver, Store};

/// A resolved name: the object and, for `<rev>:<path>`, the tree entry's mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub id: ObjectId,
    pub mode: Option<u32>,
}

/// Resolves names against one repository's refs and objects.
pub struct Names<'a> {
    pub store: &'a Store,
    pub refs: crate::refs::Refs<'a>,
    /// How the repository's files (the index, and those the refs read) are read.
    pub files: crate::refs::Files<'a>,
    pub resolver: &'a mut Resolver,
    /// The index file `:<path>` reads (`$GIT_INDEX_FILE`, else `<git-dir>/index`).
    pub index_file: super::IndexFile,
    /// `--follow-symlinks`: `<rev>:<path>` follows symlinks inside the tree.
    pub follow_symlinks: bool,
    /// `extensions.compatObjectFormat` is set: ids of the other hash's length are refused by name.
    pub compat_object_format: bool,
    /// The branches' upstreams and the remotes, for `@{upstream}` and `@{push}`.
    pub remotes: &'a crate::config::RemotesConfig,
    /// Where git's warnings about names go.
    pub messages: Messages<'a>,
}

impl Names<'_> {
    /// The object `name` names (git's `get_oid_with_context` with `GET_OID_HASH_ANY`). A reference file met on
    /// the way that may not be read (one leading outside a `--root` daemon's root) is the answer, whatever was
    /// found without it: the run dies naming it.
    pub fn resolve(&mut self, name: &[u8]) -> Result<Resolved, NameError> {
        let resolved = self.resolve_name(name);
        match self.refs.take_refused() {
            Some(refused) => Err(NameError::Refused(refused.to_string())),
            None => resolved,
        }
    }

    fn resolve_name(&mut self, name: &[u8]) -> Result<Resolved, NameError> {
        let hash = self.store.object_hash();
        if name.len() == hash.len_in_hex()
            && let Ok(id) = ObjectId::from_hex(name)
        {
            return Ok(Resolved { id, mode: None });
        }
        if self.compat_object_format
            && name.iter().take_while(|b| b.is_ascii_hexdigit()).count() == other_hash_hex_len(hash)
        {
            return Err(NameError::Unsupported { form: Form::CompatHash, name: name.to_vec() });
        }
        if let Some(form) = forms::text_form(name) {
            return Err(NameError::Unsupported { form, name: name.to_vec() });
        }
        let mut spec = Spec {
            names: self,
            name,
            peels: 0,
            reached_path: false,
            current: None,
            mode: None,
            failure: None,
            unsupported: None,
            ref_name: None,
            loud: loud(name),
        };
        // gix-revision parses a stand-in for the text of a reflog lookup, which `reflog` reads itself.
        let parsed = gix_revision::spec::parse(with_reflog_stand_in(name).as_ref().into(), &mut spec);
        if let Some(form) = spec.unsupported {
            return Err(NameError::Unsupported { form, name: name.to_vec() });
        }
        match (parsed, spec.current) {
            (Ok(()), Some(id)) => Ok(Resolved { id, mode: spec.mode }),
            _ => Err(match spec.failure {
                Some(Failure::Ambiguous { stays: true, candidates }) => NameError::Ambiguous(candidates),
                Some(Failure::Error(NameError::PathMissing { path, .. })) => {
                    NameError::PathMissing { path, rev: rev_before_path(name).to_vec() }
                }
                Some(Failure::Error(err)) if !matches!(err, NameError::Missing) => err,
                _ if !spec.reached_path && rev_before_path(name).len() < name.len() && !name.starts_with(b":") => {
                    NameError::InvalidRev(rev_before_path(name).to_vec())
                }
                _ => NameError::Missing,
            }),
        }
    }

    /// A reference by the name the user gave, in git's lookup order, followed to its object. Like git
    /// (`core.warnAmbiguousRefs`), warns when the name matches refs by more than one of git's rules, or when
    /// `also_an_id` (it is an abbreviated id of an object too); but only if `warn` (git looks the name up at all).
    fn find_ref(&self, name: &[u8], also_an_id: bool, warn: bool) -> Option<ObjectId> {
        let id = self.follow(name)?;
        if warn && (also_an_id || self.rule_matches(name) > 1) {
            let warning = format!("warning: refname '{}' is ambiguous.\n", crate::fatal::Bytes(name));
            self.messages.write(warning.as_bytes());
        }
        Some(id)
    }

    /// The object a (partial) ref name leads to.
    fn follow(&self, name: &[u8]) -> Option<ObjectId> {
        self.refs.to_object(self.refs.find(name)?)
    }

    /// The object the full ref name `name` leads to (no lookup rules).
    fn follow_full(&self, name: &[u8]) -> Option<ObjectId> {
        let full: &gix_ref::FullNameRef = gix_object::bstr::BStr::new(name).try_into().ok()?;
        let reference = self.refs.find(name)?;
        (reference.name.as_ref() == full).then(|| self.refs.to_object(reference)).flatten()
    }

    /// The branch HEAD is on (git's `current_branch`): `None` when HEAD is detached or not on `refs/heads/`.
    fn current_branch(&self) -> Option<Vec<u8>> {
        let head = self.refs.find(b"HEAD")?;
        match head.target {
            gix_ref::Target::Symbolic(target) => target.as_bstr().strip_prefix(b"refs/heads/").map(<[u8]>::to_vec),
            gix_ref::Target::Object(_) => None,
        }
    }

    /// How many of git's `ref_rev_parse_rules` name an existing ref for `name` (git's `repo_dwim_ref` count).
    fn rule_matches(&self, name: &[u8]) -> usize {
        let exact =
            usize::from(name.starts_with(b"refs/") || name.iter().all(|b| b.is_ascii_uppercase() || *b == b'_'));
        let expanded = ref_rules::prefixed(name)
            .filter(|full| {
                let full: &gix_object::bstr::BStr = full.as_slice().into();
                let Ok(full) = <&gix_ref::FullNameRef>::try_from(full) else { return false };
                self.refs.find(full.as_bstr()).is_some_and(|r| r.name.as_ref() == full)
            })
            .count();
        // A name starting with `refs/` also matches the first rule ("%s") as itself.
        expanded + exact.min(usize::from(self.follow(name).is_some()))
    }
}

impl upstream::Refs for Names<'_> {
    fn exists(&self, name: &[u8]) -> bool {
        self.follow_full(name).is_some()
    }

    fn dwim(&self, name: &[u8]) -> Option<Vec<u8>> {
        let mut found = ref_rules::expansions(name).filter(|full| self.follow_full(full).is_some());
        let first = found.next()?;
        found.next().is_none().then_some(first)
    }
}

/// Does git walk the steps of `name` (and so print their complaints)? Only if its `<rev>` is a base followed by
/// what git's `get_oid_1` takes apart (`^{…}`, `^<n>`, `~<n>`); with anything else after them (`..`, `^!`, `/`)
/// git takes the whole `<rev>` for a reference, finds none, and says nothing.
fn loud(name: &[u8]) -> bool {
    let rev = rev_before_path(name);
    match memchr::memchr2(b'^', b'~', rev) {
        Some(first) => ambiguous::looked_up(&rev[first..]),
        None => true,
    }
}

/// The length in hex of the ids of the hash that is not `hash`.
fn other_hash_hex_len(hash: gix_hash::Kind) -> usize {
    match hash {
        gix_hash::Kind::Sha1 => gix_hash::Kind::Sha256.len_in_hex(),
        _ => gix_hash::Kind::Sha1.len_in_hex(),
    }
}

enum Failure {
    /// An abbreviated id that more than one object starts with; `stays`: git answers the whole name
    /// `ambiguous` (not `missing`).
    Ambiguous {
        stays: bool,
        candidates: Vec<ObjectId>,
    },
    Error(NameError),
}

/// gix-revision's delegate: the object reached so far.
struct Spec<'n, 'a> {
    names: &'n mut Names<'a>,
    /// The whole name, and how many `^{<type>}` peels were met so far (for git's message naming the part).
    name: &'n [u8],
    peels: usize,
    /// Did the walk get as far as the `:<path>` part?
    reached_path: bool,
    current: Option<ObjectId>,
    mode: Option<u32>,
    failure: Option<Failure>,
    unsupported: Option<Form>,
    /// The reference name last looked up, for a `@{<n>}` after it.
    ref_name: Option<Vec<u8>>,
    /// Does git get as far as the steps of this name, and so say what it says on the way (see [`loud`])?
    loud: bool,
}

impl Spec<'_, '_> {
    fn set(&mut self, id: ObjectId) -> gix_error::Result {
        self.current = Some(id);
        self.mode = None;
        Ok(())
    }

    fn unsupported(&mut self, form: Form) -> gix_error::Result {
        self.unsupported.get_or_insert(form);
        Err(stop())
    }

    fn fail(&mut self, err: NameError) -> gix_error::Result {
        if !matches!(self.failure, Some(Failure::Ambiguous { .. })) {
            self.failure = Some(Failure::Error(err));
        }
        Err(stop())
    }

    fn current(&self) -> Result<ObjectId, gix_error::Error> {
        self.current.ok_or_else(stop)
    }

    /// `<rev>:<path>` (git's `get_tree_entry`, or `get_tree_entry_follow_symlinks`), keeping the entry's mode.
    fn path(&mut self, id: ObjectId, path: &[u8]) -> gix_error::Result {
        self.reached_path = true;
        if forms::path_form(path).is_some() {
            return self.relative_path();
        }
        let store = self.names.store;
        if self.names.follow_symlinks {
            return match symlinks::follow(store, self.names.resolver, id, path) {
                // An empty path is the tree itself, which git gives no mode.
                Ok(Followed::Found(entry, mode)) => self.set_entry(entry, (!path.is_empty()).then_some(mode)),
                Ok(Followed::Missing) => self.fail(NameError::Missing),
                Ok(Followed::Dangling) => self.fail(NameError::Dangling),
                Ok(Followed::Loop) => self.fail(NameError::Loop),
                Ok(Followed::NotDir) => self.fail(NameError::NotDir),
                Ok(Followed::OutOfTree(target)) => self.fail(NameError::OutOfTree(target)),
                Err(err) => self.fail(err),
            };
        }
        match walk::lookup_path(store, self.names.resolver, id, path) {
            Ok(Some((entry, mode))) => self.set_entry(entry, mode),
            Ok(None) => self.fail(NameError::PathMissing { path: path.to_vec(), rev: Vec::new() }),
            Err(err) => self.fail(err),
        }
    }

    fn set_entry(&mut self, id: ObjectId, mode: Option<u32>) -> gix_error::Result {
        self.set(id)?;
        self.mode = mode;
        Ok(())
    }

    /// `./` and `../` paths (git's `resolve_relative_path`): relative to where the command runs in the work
    /// tree. A bare repository has none, and git dies saying so; in a work tree cat-blobd does not resolve them.
    fn relative_path(&mut self) -> gix_error::Result {
        if self.names.refs.git_dir().file_name().is_some_and(|name| name == ".git") {
            return self.unsupported(Form::RelativePath);
        }
        self.fail(NameError::RelativePath)
    }

    /// More than one object starts with `text`: git picks the one candidate that what follows the abbreviation
    /// needs, or fails, saying so on stderr wherever in the name the abbreviation is (but not for a describe
    /// name: git looks those up quietly).
    fn disambiguate(&mut self, text: Vec<u8>, candidates: Vec<ObjectId>, describe: bool) -> gix_error::Result {
        let suffix = match self.name.get(..text.len()) {
            Some(start) if start.eq_ignore_ascii_case(&text) => Some(&self.name[text.len()..]),
            _ => None,
        };
        let needs = match (describe, suffix) {
            (true, _) => Needs::Commit,
            (false, Some(suffix)) => Needs::after(suffix),
            (false, None) => Needs::Anything,
        };
        if !describe && suffix.is_some_and(|suffix| !ambiguous::looked_up(suffix)) {
            return self.fail(NameError::Missing);
        }
        let (store, resolver) = (self.names.store, &mut *self.names.resolver);
        let fitting: Vec<ObjectId> =
            candidates.iter().copied().filter(|id| needs.met_by(store, resolver, id)).collect();
        if let [id] = fitting[..] {
            return self.set(id);
        }
        if !describe {
            // git lists only the fitting candidates when several fit, and all of them when none does.
            let shown = if fitting.len() > 1 { &fitting } else { &candidates };
            if self.loud {
                ambiguous::report(store, self.names.resolver, self.names.messages, &text, shown);
            }
        }
        let stays = describe || suffix.is_some_and(ambiguous::stays_ambiguous);
        self.failure = Some(Failure::Ambiguous { stays, candidates });
        Err(stop())
    }

    /// `^{<type>}` and `^0` (gix-revision reports both as a peel): git's `peel_onion` peels to the type and
    /// says on stderr where the chain ended instead; `^0` is git's `get_parent`, which wants a commit (see
    /// [`Self::commit_reference`]).
    fn peel_onion(&mut self, id: ObjectId, kind: gix_object::Kind) -> Result<Option<ObjectId>, NameError> {
        self.peels += 1;
        let onion = nth_onion(self.name, self.peels);
        if onion.ends_with(b"^0") {
            return self.commit_reference(id);
        }
        match walk::peel_or_dead_end(self.names.store, self.names.resolver, id, kind)? {
            Some(Err(reached)) => {
                // git's `peel_to_type` names the name up to this `^{<type>}`.
                let message = format!(
                    "error: {}: expected {kind} type, but the object dereferences to {reached} type\n",
                    crate::fatal::Bytes(onion)
                );
                if self.loud {
                    self.names.messages.write(message.as_bytes());
                }
                Ok(None)
            }
            peeled => Ok(peeled.and_then(Result::ok)),
        }
    }

    /// The commit `id` names, tags followed (git's `lookup_commit_reference`, for `^<n>` and `~<n>`), or `None`
    /// after git's complaint that it leads to some other type.
    fn commit_reference(&mut self, id: ObjectId) -> Result<Option<ObjectId>, NameError> {
        let store = self.names.store;
        let peeled = match walk::peel_tags(store, self.names.resolver, id) {
            Ok(peeled) => peeled,
            Err(NameError::Missing) => return Ok(None),
            Err(err) => return Err(err),
        };
        match walk::kind_of(store, &peeled)? {
            Some(gix_object::Kind::Commit) => Ok(Some(peeled)),
            Some(other) => {
                // git 2.55 names the object as given (2.47 named the tag's target).
                let message = format!("error: object {id} is a {other}, not a commit\n");
                if self.loud {
                    self.names.messages.write(message.as_bytes());
                }
                Ok(None)
            }
            None => Ok(None),
        }
    }

    /// Does git look `reference` up by that name? Only when it starts the name and what follows is something
    /// git's `get_oid_1` takes apart (`^{…}`, `^<n>`, `~<n>`, `:<path>`); before `^!`, `..` or `@{…}` git
    /// tries the whole name, finds nothing, and says nothing about the reference.
    fn looked_up_as_ref(&self, reference: &[u8]) -> bool {
        match self.name.get(..reference.len()) {
            Some(start) if start.eq_ignore_ascii_case(reference) => ambiguous::looked_up(&self.name[reference.len()..]),
            _ => false,
        }
    }

    /// Runs a step that reads objects; a step that finds nothing stops the parse as `missing`.
    fn step(&mut self, result: Result<Option<ObjectId>, NameError>) -> gix_error::Result {
        match result {
            Ok(Some(id)) => self.set(id),
            Ok(None) => self.fail(NameError::Missing),
            Err(err) => self.fail(err),
        }
    }
}

impl delegate::Revision for Spec<'_, '_> {
    fn find_ref(&mut self, name: &gix_object::bstr::BStr) -> gix_error::Result {
        // `@@{<n>}`: git reads the `@` before a reflog lookup as HEAD (`substitute_branch_name`).
        let head_log = name == "@" && self.name.starts_with(b"@@{") && !upstream::mark_follows(&self.name[1..]);
        let name: &gix_object::bstr::BStr = if head_log { "HEAD".into() } else { name };
        self.ref_name = Some(name.to_vec());
        if self.name.starts_with(name) && upstream::mark_follows(&self.name[name.len()..]) {
            // `<branch>@{upstream}`: git reads `<branch>` as a branch name, not as a reference.
            return Ok(());
        }
        let warn = self.looked_up_as_ref(name);
        match self.names.find_ref(name, false, warn) {
            Some(id) => self.set(id),
            None => self.fail(NameError::Missing),
        }
    }

    fn disambiguate_prefix(&mut self, prefix: Prefix, hint: Option<PrefixHint<'_>>) -> gix_error::Result {
        let text = prefix.to_string().into_bytes();
        let also_an_id = || matches!(self.names.store.find_prefix(&prefix), PrefixMatch::Unique(_));
        if hint.is_none()
            && self.names.follow(&text).is_some()
            && let Some(id) = self.names.find_ref(&text, also_an_id(), self.looked_up_as_ref(&text))
        {
            // git looks the name up as a reference first.
            return self.set(id);
        }
        let hex_len = self.names.store.object_hash().len_in_hex();
        if prefix.hex_len() == hex_len {
            return self.set(prefix.as_oid().to_owned());
        }
        if prefix.hex_len() > hex_len {
            // git searches up to 64 digits (GIT_MAX_HEXSZ). Its loose objects compare all of them with the id
            // in a 32-byte buffer, zero past the hash: the id followed by zeros. Its pack indexes compare only
            // the hash's length: the id followed by anything.
            let id = ObjectId::from_hex(&text[..hex_len]).expect("hex digits of the hash's length");
            if text[hex_len..].iter().all(|&digit| digit == b'0') || self.names.store.in_pack(&id) {
                return self.set(id);
            }
            return self.fail(NameError::Missing);
        }
        if hint.is_some() && !describe_output(self.name, &text) {
            // git 2.55 takes `<ref>-<count>-g<abbrev>` for describe output only with a count and a valid ref
            // name (2.47 took any `<anything>-g<abbrev>`): anything else names nothing.
            return self.fail(NameError::Missing);
        }
        match self.names.store.find_prefix(&prefix) {
            PrefixMatch::Unique(id) => self.set(id),
            PrefixMatch::None => self.fail(NameError::Missing),
            PrefixMatch::Ambiguous(candidates) => self.disambiguate(text, candidates, hint.is_some()),
        }
    }

    fn reflog(&mut self, _query: ReflogLookup) -> gix_error::Result {
        // `<name>@{…}` reads the reflog of the reference `<name>` names; `@{…}` that of the branch HEAD is on.
        let (hash, mut warnings) = (self.names.store.object_hash(), Vec::new());
        let ref_name = self.ref_name.take();
        let found = reflog::at_mark(&self.names.refs, hash, self.name, ref_name.as_deref(), &mut warnings);
        if !warnings.is_empty() {
            self.names.messages.write(&warnings);
        }
        self.step(found.map_err(NameError::from))
    }

    fn nth_checked_out_branch(&mut self, branch_no: usize) -> gix_error::Result {
        // git finds the branch in HEAD's reflog: without one (a bare repository) the name names nothing. A
        // detached HEAD was recorded by its id; a branch is then looked up by git's rules.
        let hash = self.names.store.object_hash();
        let branch = match reflog::nth_prior_checkout(&self.names.refs, hash, branch_no) {
            Ok(Some(branch)) => branch,
            Ok(None) => return self.fail(NameError::Missing),
            Err(err) => return self.fail(err.into()),
        };
        let hex_len = self.names.store.object_hash().len_in_hex();
        if branch.len() == hex_len
            && let Ok(id) = ObjectId::from_hex(&branch)
        {
            return self.set(id);
        }
        let found = self.names.find_ref(&branch, false, true);
        // `@{-<n>}@{upstream}`: that of the branch checked out.
        self.ref_name = Some(branch);
        match found {
            Some(id) => self.set(id),
            None => self.fail(NameError::Missing),
        }
    }

    fn sibling_branch(&mut self, kind: SiblingBranch) -> gix_error::Result {
        // git's `interpret_branch_mark`: `<branch>@{…}` (`HEAD`, `@` or nothing: the branch HEAD is on), mapped
        // to a full ref name through the configuration, which names the object (or nothing, if never fetched).
        let branch = match self.ref_name.take() {
            Some(name) if !matches!(&name[..], b"" | b"HEAD" | b"@") => Some(name),
            _ => self.names.current_branch(),
        };
        let names = &*self.names;
        let found = match kind {
            SiblingBranch::Upstream => upstream::upstream(names.remotes, names, branch.as_deref()),
            SiblingBranch::Push => upstream::push(names.remotes, names, branch.as_deref()),
        };
        match found {
            Ok(full) => {
                let id = self.names.follow_full(&full);
                self.ref_name = Some(full);
                match id {
                    Some(id) => self.set(id),
                    None => self.fail(NameError::Missing),
                }
            }
            Err(err) => self.fail(NameError::Branch(err)),
        }
    }
}

impl delegate::Navigate for Spec<'_, '_> {
    fn traverse(&mut self, kind: Traversal) -> gix_error::Result {
        let id = self.current()?;
        let id = match self.commit_reference(id) {
            Ok(Some(id)) => id,
            other => return self.step(other),
        };
        let result = match kind {
            Traversal::NthParent(n) => walk::nth_parent(self.names.store, self.names.resolver, id, n),
            Traversal::NthAncestor(n) => walk::nth_ancestor(self.names.store, self.names.resolver, id, n),
        };
        self.step(result)
    }

    fn peel_until(&mut self, kind: PeelTo<'_>) -> gix_error::Result {
        let id = self.current()?;
        let store = self.names.store;
        match kind {
            PeelTo::ObjectKind(kind) => {
                let peeled = self.peel_onion(id, kind);
                self.step(peeled)
            }
            PeelTo::ValidObject => self.step(walk::kind_of(store, &id).map(|kind| kind.map(|_| id))),
            PeelTo::RecursiveTagObject => {
                let peeled = walk::peel_tags(store, self.names.resolver, id).map(Some);
                self.step(peeled)
            }
            PeelTo::Path(path) => self.path(id, path),
        }
    }

    fn find(&mut self, regex: &gix_object::bstr::BStr, negated: bool) -> gix_error::Result {
        let (store, names) = (self.names.store, &mut *self.names);
        let starts = match self.current {
            // `<rev>^{/<text>}`: from the commit `<rev>` peels to; `^{/}` is that commit.
            Some(id) => match self.peel_onion(id, gix_object::Kind::Commit) {
                Ok(Some(commit)) if regex.is_empty() => return self.set(commit),
                Ok(Some(commit)) => vec![commit],
                Ok(None) => return self.fail(NameError::Missing),
                Err(err) => return self.fail(err),
            },
            None => {
                let names = &*names;
                let tips: Vec<ObjectId> =
                    search::ref_names(&names.refs).iter().filter_map(|name| names.follow(name)).collect();
                match search::commits_of(store, self.names.resolver, &tips) {
                    Ok(starts) => starts,
                    Err(err) => return self.fail(err),
                }
            }
        };
        let found = search::youngest_matching(store, self.names.resolver, &starts, regex, negated);
        self.step(found)
    }

    fn index_lookup(&mut self, path: &gix_object::bstr::BStr, stage: u8) -> gix_error::Result {
        if forms::path_form(path).is_some() {
            return self.relative_path();
        }
        // Without an index (a bare repository) nothing is in it.
        let hash = self.names.store.object_hash();
        match index::lookup(&self.names.index_file, hash, path, stage, self.names.files) {
            Ok(index::Entry::Found { id, mode }) => self.set_entry(id, Some(mode)),
            Ok(index::Entry::Absent) => self.fail(NameError::NotInIndex(path.to_vec())),
            Ok(index::Entry::OtherStage(found)) => {
                self.fail(NameError::NotAtStage { path: path.to_vec(), stage, found })
            }
            Err(err) => {
                if let Some(complaint) = err.complaint() {
                    self.names.messages.write(complaint.as_bytes());
                }
                self.fail(NameError::Index(err))
            }
        }
    }
}

impl delegate::Kind for Spec<'_, '_> {
    fn kind(&mut self, _kind: gix_revision::spec::Kind) -> gix_error::Result {
        // A range or an exclusion is not an object name: git's get_oid finds nothing by it.
        self.fail(NameError::Missing)
    }
}

impl gix_revision::spec::parse::Delegate for Spec<'_, '_> {
    fn done(&mut self) -> gix_error::Result {
        self.current().map(|_| ())
    }
}
