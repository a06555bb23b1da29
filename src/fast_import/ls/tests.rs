//! `ls` against an in-memory object source: git's answers and errors, and what is read to find them.
use std::collections::HashMap;
use std::path::PathBuf;

use super::tree::tests::tree_bytes;
use super::*;
use crate::fatal::Bytes;
use crate::store::{Damage, Location, Object};
use crate::store::{Data, oid};

const SHA1: gix_hash::Kind = gix_hash::Kind::Sha1;
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// An in-memory [`ObjectSource`] that records what was read.
struct Fake {
    hash: gix_hash::Kind,
    objects: HashMap<ObjectId, Object>,
    marks: HashMap<u64, ObjectId>,
    damaged: HashSet<ObjectId>,
    /// Ids that [`ObjectSource::written_by_stream`] claims.
    stream: HashSet<ObjectId>,
    reads: Vec<ObjectId>,
}

impl Fake {
    fn new(hash: gix_hash::Kind) -> Fake {
        Fake {
            hash,
            objects: HashMap::new(),
            marks: HashMap::new(),
            damaged: HashSet::new(),
            stream: HashSet::new(),
            reads: Vec::new(),
        }
    }

    fn add(&mut self, kind: Kind, data: &[u8]) -> ObjectId {
        let id = gix_object::compute_hash(self.hash, kind, data).expect("hash");
        self.objects.insert(id, Object { kind, data: Data::new(data.to_vec()) });
        id
    }

    fn blob(&mut self, content: &str) -> ObjectId {
        self.add(Kind::Blob, content.as_bytes())
    }

    /// A tree from `(mode digits, name, id)` entries, in the order given (no sorting, no checks).
    fn tree(&mut self, entries: &[(&str, &[u8], ObjectId)]) -> ObjectId {
        let data = tree_bytes(entries);
        self.add(Kind::Tree, &data)
    }

    fn commit(&mut self, tree: ObjectId) -> ObjectId {
        let data = format!("tree {tree}\nauthor A <a@b> 0 +0000\ncommitter C <c@d> 0 +0000\n\nmsg\n");
        self.add(Kind::Commit, data.as_bytes())
    }

    fn tag(&mut self, target: ObjectId, kind: &str) -> ObjectId {
        let data = format!("object {target}\ntype {kind}\ntag t\ntagger T <t@t> 0 +0000\n\nmsg\n");
        self.add(Kind::Tag, data.as_bytes())
    }

    fn ls(&mut self, line: &[u8]) -> Result<Vec<u8>, LsError> {
        self.ls_with(line, LsOptions::default())
    }

    fn ls_with(&mut self, line: &[u8], options: LsOptions) -> Result<Vec<u8>, LsError> {
        let arg = line.strip_prefix(b"ls ").expect("an ls line");
        // A cache that keeps nothing: each test sees every read.
        ls(line, arg, self, &TreeCache::new(0), &options)
    }

    /// The response for a line that must succeed, with `trees` kept between calls.
    fn ok_cached(&mut self, line: &str, trees: &TreeCache) -> String {
        let arg = line.strip_prefix("ls ").expect("an ls line").as_bytes();
        let out = ls(line.as_bytes(), arg, self, trees, &LsOptions::default()).expect(line);
        String::from_utf8(out).expect("ASCII response")
    }

    /// The response for a line that must succeed.
    fn ok(&mut self, line: &str) -> String {
        let out = self.ls(line.as_bytes()).unwrap_or_else(|err| panic!("{line:?}: {err}"));
        String::from_utf8(out).expect("ASCII response")
    }

    /// The message for a line that must fail.
    fn err(&mut self, line: &str) -> String {
        match self.ls(line.as_bytes()) {
            Ok(out) => panic!("{line:?} answered {:?}", Bytes(&out)),
            Err(err) => err.to_string(),
        }
    }
}

impl ObjectSource for Fake {
    fn object_hash(&self) -> gix_hash::Kind {
        self.hash
    }

    fn mark(&self, mark: u64) -> Option<ObjectId> {
        self.marks.get(&mark).copied()
    }

    fn written_by_stream(&self, id: &oid) -> bool {
        self.stream.contains(id)
    }

    fn read(&mut self, id: &oid) -> Result<Option<Object>, ReadError> {
        self.reads.push(id.to_owned());
        if self.damaged.contains(id) {
            return Err(ReadError {
                oid: id.to_owned(),
                location: Location::Loose { path: PathBuf::from("objects/xx/yy") },
                damage: Damage::Zlib,
            });
        }
        if id == ObjectId::empty_tree(self.hash) {
            return Ok(Some(Object { kind: Kind::Tree, data: Data::default() }));
        }
        Ok(self.objects.get(id).cloned())
    }
}

/// A small repository: `file`, `exe`, `link`, `gitlink`, `dir/{sub/deep,y}`, quoted names, a commit on top.
struct Repo {
    fake: Fake,
    file: ObjectId,
    y: ObjectId,
    deep: ObjectId,
    sub: ObjectId,
    dir: ObjectId,
    root: ObjectId,
    commit: ObjectId,
    gitlink: ObjectId,
}

fn repo() -> Repo {
    let mut fake = Fake::new(SHA1);
    let file = fake.blob("file\n");
    let y = fake.blob("y\n");
    let deep = fake.blob("deep\n");
    let sub = fake.tree(&[("100644", b"deep", deep)]);
    let dir = fake.tree(&[("40000", b"sub", sub), ("100644", b"y", y)]);
    let gitlink = ObjectId::from_hex(b"1234567890123456789012345678901234567890").unwrap();
    let root = fake.tree(&[
        ("40000", b"dir", dir),
        ("100755", b"exe", file),
        ("100644", b"file", file),
        ("160000", b"gitlink", gitlink),
        ("100644", "h\u{e9}llo".as_bytes(), file),
        ("120000", b"link", file),
        ("100644", b"q\"uote", file),
        ("100644", b"with space", file),
        ("100644", b"with\ttab", file),
    ]);
    let commit = fake.commit(root);
    Repo { fake, file, y, deep, sub, dir, root, commit, gitlink }
}

#[test]
fn prints_mode_type_id_and_requested_path() {
    let Repo { mut fake, file, y, deep, sub, dir, root, commit, gitlink } = repo();
    assert_eq!(fake.ok(&format!("ls {root} file")), format!("100644 blob {file}\tfile\n"));
    assert_eq!(fake.ok(&format!("ls {commit} exe")), format!("100755 blob {file}\texe\n"));
    assert_eq!(fake.ok(&format!("ls {commit} link")), format!("120000 blob {file}\tlink\n"));
    assert_eq!(fake.ok(&format!("ls {commit} gitlink")), format!("160000 commit {gitlink}\tgitlink\n"));
    assert_eq!(fake.ok(&format!("ls {commit} dir")), format!("040000 tree {dir}\tdir\n"));
    assert_eq!(fake.ok(&format!("ls {commit} dir/y")), format!("100644 blob {y}\tdir/y\n"));
    assert_eq!(fake.ok(&format!("ls {commit} dir/sub")), format!("040000 tree {sub}\tdir/sub\n"));
    assert_eq!(fake.ok(&format!("ls {commit} dir/sub/deep")), format!("100644 blob {deep}\tdir/sub/deep\n"));
    assert_eq!(fake.ok(&format!("ls {commit} with space")), format!("100644 blob {file}\twith space\n"));
}

#[test]
fn missing_paths() {
    let Repo { mut fake, commit, .. } = repo();
    for path in [
        "nosuch",
        "no such with space",
        "dir/nosuch",
        "dir/sub/deep/x",
        "file/x",
        "file/",
        "gitlink/x",
        "link/x",
        " file",
        "file ",
        "./file",
        "dir/./y",
        "dir/../file",
        "FILE",
    ] {
        assert_eq!(fake.ok(&format!("ls {commit} {path}")), format!("missing {path}\n"), "{path}");
    }
    assert_eq!(fake.ok(&format!("ls {commit} \"\\\"lead\"")), "missing \"\\\"lead\"\n");
}

#[test]
fn empty_first_component_is_the_root_with_the_path_as_written() {
    let Repo { mut fake, root, commit, .. } = repo();
    for path in ["", "/", "/file", "/nosuch/x", "//", "/dir/"] {
        assert_eq!(fake.ok(&format!("ls {commit} {path}")), format!("040000 tree {root}\t{path}\n"), "{path}");
    }
    assert_eq!(fake.ok(&format!("ls {commit} \"\"")), format!("040000 tree {root}\t\n"));
    assert_eq!(fake.ok(&format!("ls {commit} \"/a\\tb\"")), format!("040000 tree {root}\t\"/a\\tb\"\n"));
}

#[test]
fn empty_component_below_the_root_is_an_error() {
    let Repo { mut fake, commit, .. } = repo();
    for path in ["dir/", "dir//y", "dir/sub/", "dir/sub//deep"] {
        assert_eq!(fake.err(&format!("ls {commit} {path}")), "empty path component found in input", "{path}");
    }
}

#[test]
fn printed_path_is_c_quoted_per_core_quote_path() {
    let Repo { mut fake, file, commit, .. } = repo();
    assert_eq!(fake.ok(&format!("ls {commit} \"with\\ttab\"")), format!("100644 blob {file}\t\"with\\ttab\"\n"));
    assert_eq!(fake.ok(&format!("ls {commit} \"q\\\"uote\"")), format!("100644 blob {file}\t\"q\\\"uote\"\n"));
    assert_eq!(fake.ok(&format!("ls {commit} q\"uote")), format!("100644 blob {file}\t\"q\\\"uote\"\n"));
    assert_eq!(fake.ok(&format!("ls {commit} h\u{e9}llo")), format!("100644 blob {file}\t\"h\\303\\251llo\"\n"));
    let line = format!("ls {commit} \"h\\303\\251llo\"");
    let raw = LsOptions { quote_path: false, ignore_case: false };
    let out = fake.ls_with(line.as_bytes(), raw).unwrap();
    assert_eq!(out, format!("100644 blob {file}\th\u{e9}llo\n").into_bytes());
    let line = format!("ls {commit} \"\\001\\177\\033\\a\\b\\f\\v\\r\\\\\\\"\\351 z\"");
    let out = fake.ls_with(line.as_bytes(), raw).unwrap();
    assert_eq!(out, b"missing \"\\001\\177\\033\\a\\b\\f\\v\\r\\\\\\\"\xe9 z\"\n");
    assert_eq!(fake.ok(&format!("ls {commit} \"new\\nline\"")), "missing \"new\\nline\"\n");
    assert_eq!(fake.ok(&format!("ls {commit} back\\slash")), "missing \"back\\\\slash\"\n");
}

#[test]
fn ignore_case_compares_ascii_only_and_prints_the_requested_path() {
    let mut fake = Fake::new(SHA1);
    let (upper, lower, u_umlaut) = (fake.blob("upper"), fake.blob("lower"), fake.blob("u"));
    let dir = fake.tree(&[("100644", b"Y", upper)]);
    let root = fake.tree(&[
        ("100644", b"A", upper),
        ("100644", b"a", lower),
        ("40000", b"Dir", dir),
        ("100644", "\u{fc}".as_bytes(), u_umlaut),
    ]);
    let fold = LsOptions { quote_path: false, ignore_case: true };
    let mut ls_fold =
        |path: &str| String::from_utf8(fake.ls_with(format!("ls {root} {path}").as_bytes(), fold).unwrap()).unwrap();
    assert_eq!(ls_fold("a"), format!("100644 blob {upper}\ta\n"), "the first match in stored order wins");
    assert_eq!(ls_fold("DIR/y"), format!("100644 blob {upper}\tDIR/y\n"));
    assert_eq!(ls_fold("dIr"), format!("040000 tree {dir}\tdIr\n"));
    assert_eq!(ls_fold("\u{dc}"), "missing \u{dc}\n", "no folding beyond ASCII");
    assert_eq!(fake.ok(&format!("ls {root} a")), format!("100644 blob {lower}\ta\n"));
    assert_eq!(fake.ok(&format!("ls {root} DIR/y")), "missing DIR/y\n");
}

#[test]
fn raw_modes_are_printed_as_stored() {
    let mut fake = Fake::new(SHA1);
    let blob = fake.blob("b");
    let inner = fake.tree(&[("100644", b"x", blob)]);
    let root = fake.tree(&[
        ("100664", b"m100664", blob),
        ("644", b"m644", blob),
        ("40755", b"m40755", inner),
        ("040000", b"m040000", inner),
        ("0", b"m0", blob),
        ("4000", b"m4000", blob),
        ("104644", b"m104644", blob),
        ("140000", b"m140000", blob),
        ("1100644", b"m1100644", blob),
        ("00000100644", b"m00000100644", blob),
        ("44000", b"m44000", inner),
        ("160755", b"m160755", blob),
    ]);
    let expect = [
        ("m100664", format!("100664 blob {blob}")),
        ("m644", format!("000644 blob {blob}")),
        ("m40755", format!("040755 tree {inner}")),
        ("m40755/x", format!("100644 blob {blob}")),
        ("m040000", format!("040000 tree {inner}")),
        ("m4000", format!("000000 blob {blob}")),
        ("m104644", format!("100644 blob {blob}")),
        ("m140000", format!("140000 blob {blob}")),
        ("m1100644", format!("100644 blob {blob}")),
        ("m00000100644", format!("100644 blob {blob}")),
        ("m44000", format!("040000 tree {inner}")),
        ("m44000/x", format!("100644 blob {blob}")),
        ("m160755", format!("160755 commit {blob}")),
    ];
    for (path, prefix) in expect {
        assert_eq!(fake.ok(&format!("ls {root} {path}")), format!("{prefix}\t{path}\n"), "{path}");
    }
    assert_eq!(fake.ok(&format!("ls {root} m0")), "missing m0\n", "mode 0 is git's 'deleted'");
    assert_eq!(fake.ok(&format!("ls {root} m0/x")), "missing m0/x\n");
    assert_eq!(fake.ok(&format!("ls {root} m140000/x")), "missing m140000/x\n", "140000 is not a directory");
}

#[test]
fn a_directory_with_the_null_id_is_the_empty_tree() {
    let mut fake = Fake::new(SHA1);
    let null = ObjectId::null(SHA1);
    let root = fake.tree(&[("40000", b"nulldir", null), ("40755", b"odd", null), ("100644", b"nullblob", null)]);
    assert_eq!(fake.ok(&format!("ls {root} nulldir")), format!("040000 tree {EMPTY_TREE}\tnulldir\n"));
    assert_eq!(fake.ok(&format!("ls {root} odd")), format!("040755 tree {EMPTY_TREE}\todd\n"));
    assert_eq!(fake.ok(&format!("ls {root} nullblob")), format!("100644 blob {null}\tnullblob\n"));
    assert_eq!(fake.ok(&format!("ls {root} nulldir/x")), "missing nulldir/x\n");
    assert_eq!(fake.err(&format!("ls {root} nulldir/")), "empty path component found in input");
    assert!(!fake.reads.contains(&null), "the null id is never read");
}

#[test]
fn names_that_can_never_match() {
    let mut fake = Fake::new(SHA1);
    let blob = fake.blob("b");
    let root = fake.tree(&[("100644", b"", blob), ("100644", b"a/b", blob), ("100644", b"a", blob)]);
    assert_eq!(fake.ok(&format!("ls {root} a/b")), "missing a/b\n", "a stored name with a slash");
    assert_eq!(fake.ok(&format!("ls {root} a")), format!("100644 blob {blob}\ta\n"));
}

#[test]
fn malformed_trees_are_corrupt_mode() {
    let mut fake = Fake::new(SHA1);
    let blob = fake.blob("b");
    let good = tree_bytes(&[("100644", b"a", blob)]);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty mode", tree_bytes(&[("", b"a", blob)])),
        ("non-octal mode", tree_bytes(&[("10064x", b"a", blob)])),
        ("digit 8", tree_bytes(&[("100648", b"a", blob)])),
        ("NUL in mode", [&good[..], b"100\x00644 b\x00", &[0; 20]].concat()),
        ("mode only", [&good[..], b"100644"].concat()),
        ("mode and space", [&good[..], b"100644 "].concat()),
        ("no NUL after name", [&good[..], b"100644 name"].concat()),
        ("short id", [&good[..], b"100644 b\x00", &[1; 19]].concat()),
        ("leading space", [&good[..], b" 100644 b\x00", &[1; 20]].concat()),
    ];
    for (what, data) in cases {
        let root = fake.add(Kind::Tree, &data);
        // The whole tree is parsed before the lookup, so a good first entry does not help, and a bad
        // root tree is reported before a bad path.
        assert_eq!(fake.err(&format!("ls {root} a")), format!("corrupt mode in {root}"), "{what}");
        assert_eq!(fake.err(&format!("ls {root} \"bad")), format!("corrupt mode in {root}"), "{what}");
    }
}

#[test]
fn subtrees_are_loaded_only_when_descended_into() {
    let mut fake = Fake::new(SHA1);
    let blob = fake.blob("b");
    let corrupt = fake.add(Kind::Tree, b"10064x a\x00");
    let damaged = fake.tree(&[("100644", b"d", blob)]);
    fake.damaged.insert(damaged);
    let commit = fake.commit(blob);
    let missing = ObjectId::from_hex(b"1234567890123456789012345678901234567890").unwrap();
    let root = fake.tree(&[
        ("40000", b"corrupt", corrupt),
        ("40000", b"damaged", damaged),
        ("40000", b"toblob", blob),
        ("40000", b"tocommit", commit),
        ("40000", b"tomissing", missing),
        ("100644", b"z", blob),
    ]);
    assert_eq!(fake.ok(&format!("ls {root} z")), format!("100644 blob {blob}\tz\n"));
    assert_eq!(fake.ok(&format!("ls {root} corrupt")), format!("040000 tree {corrupt}\tcorrupt\n"));
    assert_eq!(fake.ok(&format!("ls {root} tomissing")), format!("040000 tree {missing}\ttomissing\n"));
    assert_eq!(fake.reads, vec![root, root, root], "only the root was read");
    assert_eq!(fake.err(&format!("ls {root} corrupt/a")), format!("corrupt mode in {corrupt}"));
    // The subtree is loaded before the empty component is noticed.
    assert_eq!(fake.err(&format!("ls {root} corrupt/")), format!("corrupt mode in {corrupt}"));
    assert_eq!(fake.err(&format!("ls {root} toblob/x")), format!("can't load tree {blob}"));
    assert_eq!(fake.err(&format!("ls {root} tocommit/x")), format!("can't load tree {commit}"));
    assert_eq!(fake.err(&format!("ls {root} tomissing/x")), format!("can't load tree {missing}"));
    assert_eq!(fake.err(&format!("ls {root} tomissing/")), format!("can't load tree {missing}"));
    assert!(matches!(fake.ls(format!("ls {root} damaged/d").as_bytes()), Err(LsError::Read(e)) if e.oid == damaged));
}

#[test]
fn damage_while_resolving_is_an_error_not_absence() {
    let Repo { mut fake, root, commit, .. } = repo();
    fake.damaged.insert(root);
    assert!(matches!(fake.ls(format!("ls {commit} file").as_bytes()), Err(LsError::Read(e)) if e.oid == root));
    fake.damaged.insert(commit);
    assert!(matches!(fake.ls(format!("ls {commit} \"bad").as_bytes()), Err(LsError::Read(e)) if e.oid == commit));
}

#[test]
fn peels_tags_and_commits_to_a_tree() {
    let Repo { mut fake, file, root, commit, .. } = repo();
    let tag = fake.tag(commit, "commit");
    let tag_of_tag = fake.tag(tag, "tag");
    let tag_of_tree = fake.tag(root, "tree");
    // A commit whose "tree" is a commit: git peels again.
    let commit_of_commit = fake.add(Kind::Commit, format!("tree {commit}\n").as_bytes());
    for start in [root, commit, tag, tag_of_tag, tag_of_tree, commit_of_commit] {
        assert_eq!(fake.ok(&format!("ls {start} file")), format!("100644 blob {file}\tfile\n"));
    }
    let upper = commit.to_string().to_ascii_uppercase();
    assert_eq!(fake.ok(&format!("ls {upper} file")), format!("100644 blob {file}\tfile\n"));
}

#[test]
fn peeling_reads_only_the_hex_at_the_fixed_offset() {
    let Repo { mut fake, file, root, .. } = repo();
    let root_hex = root.to_string();
    let accepted = [
        format!("tree {}", root_hex.to_ascii_uppercase()),
        format!("XXXX {root_hex}"),
        format!("tree {root_hex}{root_hex}"),
        format!("tree {root_hex}junk"),
    ];
    for data in accepted {
        let c = fake.add(Kind::Commit, data.as_bytes());
        assert_eq!(fake.ok(&format!("ls {c} file")), format!("100644 blob {file}\tfile\n"), "{data}");
    }
    for data in [format!("tree {}", &root_hex[..39]), format!("tree {}g", &root_hex[..39]), String::new()] {
        let c = fake.add(Kind::Commit, data.as_bytes());
        let line = format!("ls {c} file");
        assert_eq!(fake.err(&line), format!("invalid SHA1 in commit: {line}"), "{data}");
    }
    let t = fake.add(Kind::Tag, format!("object {}", root_hex.to_ascii_uppercase()).as_bytes());
    assert_eq!(fake.ok(&format!("ls {t} file")), format!("100644 blob {file}\tfile\n"));
    for data in [format!("object {}", &root_hex[..39]), format!("tree {root_hex}"), String::new()] {
        let t = fake.add(Kind::Tag, data.as_bytes());
        let line = format!("ls {t} file");
        assert_eq!(fake.err(&line), format!("invalid SHA1 in tag: {line}"), "{data}");
    }
    // A tag to a commit with a bad tree line: the commit's error.
    let bad_commit = fake.add(Kind::Commit, b"tree xyz");
    let t = fake.tag(bad_commit, "commit");
    let line = format!("ls {t} file");
    assert_eq!(fake.err(&line), format!("invalid SHA1 in commit: {line}"));
}

#[test]
fn resolution_errors() {
    let Repo { mut fake, file, commit, .. } = repo();
    let null = ObjectId::null(SHA1);
    let missing = ObjectId::from_hex(b"1234567890123456789012345678901234567890").unwrap();
    let blob_tag = fake.tag(file, "blob");
    let to_missing = fake.add(Kind::Commit, format!("tree {missing}\n").as_bytes());
    let to_null = fake.add(Kind::Commit, format!("tree {null}\n").as_bytes());
    let to_blob = fake.add(Kind::Commit, format!("tree {file}\n").as_bytes());
    assert_eq!(fake.err(&format!("ls {missing} x")), format!("object not found: {missing}"));
    // The dataref is resolved before the path is parsed.
    assert_eq!(fake.err(&format!("ls {missing} \"bad")), format!("object not found: {missing}"));
    assert_eq!(fake.err(&format!("ls {null} x")), format!("object not found: {null}"));
    assert_eq!(fake.err(&format!("ls {to_missing} x")), format!("object not found: {missing}"));
    assert_eq!(fake.err(&format!("ls {to_null} x")), format!("object not found: {null}"));
    assert!(!fake.reads.contains(&null), "the null id is never read");
    for start in [file, blob_tag, to_blob] {
        let line = format!("ls {start} \"bad");
        assert_eq!(fake.err(&line), format!("not a tree-ish: {line}"));
    }
    assert_eq!(fake.ok(&format!("ls {EMPTY_TREE} x")), "missing x\n");
    assert_eq!(fake.ok(&format!("ls {EMPTY_TREE} ")), format!("040000 tree {EMPTY_TREE}\t\n"));
    let _ = commit;
}

#[test]
fn a_peeling_cycle_is_an_error_not_a_hang() {
    // Only replace refs can make one; the fake simply serves two tags that name each other.
    let mut fake = Fake::new(SHA1);
    let a = ObjectId::from_hex(b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").unwrap();
    let b = ObjectId::from_hex(b"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb").unwrap();
    let tag = |target: ObjectId| Object { kind: Kind::Tag, data: Data::new(format!("object {target}\n").into_bytes()) };
    fake.objects.insert(a, tag(b));
    fake.objects.insert(b, tag(a));
    let line = format!("ls {a} x");
    assert!(matches!(fake.ls(line.as_bytes()), Err(LsError::PeelCycle(l)) if l == line.as_bytes()));
}

#[test]
fn dataref_errors() {
    let Repo { mut fake, file, commit, .. } = repo();
    let c = commit.to_string();
    let cases = [
        ("ls \"x\"".to_string(), "not in a commit: ls \"x\""),
        ("ls \"bad".to_string(), "not in a commit: ls \"bad"),
        ("ls :x y".to_string(), "no value after ':' in mark: ls :x y"),
        ("ls :".to_string(), "no value after ':' in mark: ls :"),
        ("ls :1x y".to_string(), "missing space after mark: ls :1x y"),
        ("ls :1".to_string(), "missing space after mark: ls :1"),
        ("ls :7 y".to_string(), "mark :7 not declared"),
        ("ls :0 y".to_string(), "mark :0 not declared"),
        ("ls :-1 y".to_string(), "mark :18446744073709551615 not declared"),
        ("ls ".to_string(), "invalid dataref: ls "),
        ("ls abc x".to_string(), "invalid dataref: ls abc x"),
        ("ls HEAD x".to_string(), "invalid dataref: ls HEAD x"),
        (format!("ls {} x", &c[..39]), ""),
        (format!("ls {c}{c} x"), ""),
        (format!("ls {c}x"), "missing space after tree-ish"),
        (format!("ls {c}"), "missing space after tree-ish"),
        (format!("ls {c}\tx"), "missing space after tree-ish"),
    ];
    for (line, expected) in cases {
        let expected = match expected {
            "" => format!("invalid dataref: {line}"),
            "missing space after tree-ish" => format!("missing space after tree-ish: {line}"),
            text => text.to_string(),
        };
        assert_eq!(fake.err(&line), expected, "{line}");
    }
    // The missing-space check comes before the mark lookup.
    fake.marks.insert(1, commit);
    fake.marks.insert(2, file);
    assert_eq!(fake.ok("ls :1 file"), format!("100644 blob {file}\tfile\n"));
    assert_eq!(fake.ok("ls : +01 file"), format!("100644 blob {file}\tfile\n"), "strtoumax rules");
    assert_eq!(fake.err("ls :2 file"), "not a tree-ish: ls :2 file");
}

#[test]
fn path_errors() {
    let Repo { mut fake, commit, .. } = repo();
    for (path, message) in [
        ("\"unterminated", "invalid path"),
        ("\"bad\\x\"", "invalid path"),
        ("\"bad\\8\"", "invalid path"),
        ("\"bad\\400\"", "invalid path"),
        ("\"a\\000b\"", "NUL in path"),
        ("\"a\\000b\" x", "NUL in path"),
        ("\"file\" ", "garbage after path"),
        ("\"file\"x", "garbage after path"),
        ("\"\"\"", "garbage after path"),
    ] {
        let line = format!("ls {commit} {path}");
        assert_eq!(fake.err(&line), format!("{message}: {line}"), "{path}");
    }
}

#[test]
fn sha256_repositories() {
    let mut fake = Fake::new(gix_hash::Kind::Sha256);
    let blob = fake.blob("b");
    let null = ObjectId::null(gix_hash::Kind::Sha256);
    let root = fake.tree(&[("100644", b"f", blob), ("40000", b"nulldir", null)]);
    let commit = fake.commit(root);
    let tag = fake.tag(commit, "commit");
    assert_eq!(blob.to_string().len(), 64);
    assert_eq!(fake.ok(&format!("ls {tag} f")), format!("100644 blob {blob}\tf\n"));
    let empty = ObjectId::empty_tree(gix_hash::Kind::Sha256);
    assert_eq!(fake.ok(&format!("ls {root} nulldir")), format!("040000 tree {empty}\tnulldir\n"));
    let sha1_line = format!("ls {} f", &root.to_string()[..40]);
    assert_eq!(fake.err(&sha1_line), format!("invalid dataref: {sha1_line}"));
    // A commit whose tree line has only 40 hex digits is invalid in a SHA-256 repository.
    let short = fake.add(Kind::Commit, format!("tree {}\n", &root.to_string()[..40]).as_bytes());
    let line = format!("ls {short} f");
    assert_eq!(fake.err(&line), format!("invalid SHA1 in commit: {line}"));
}

#[test]
fn messages_keep_invalid_utf8_visible() {
    let Repo { mut fake, commit, .. } = repo();
    let line = [format!("ls {commit} \"\\q").as_bytes(), b"\xff"].concat();
    let err = fake.ls(&line).unwrap_err();
    let expected = [format!("invalid path: ls {commit} \"\\q").as_bytes(), b"\xff"].concat();
    assert_eq!(crate::fatal::message_bytes(&err.to_string()), expected, "the byte reaches stderr raw");
}

#[test]
fn trees_met_once_are_not_read_again() {
    let Repo { mut fake, deep, sub, dir, root, commit, y, .. } = repo();
    let trees = TreeCache::default();
    assert_eq!(
        fake.ok_cached(&format!("ls {commit} dir/sub/deep"), &trees),
        format!("100644 blob {deep}\tdir/sub/deep\n")
    );
    assert_eq!(fake.reads, vec![commit, root, dir, sub]);
    fake.reads.clear();
    assert_eq!(fake.ok_cached(&format!("ls {commit} dir/y"), &trees), format!("100644 blob {y}\tdir/y\n"));
    assert!(fake.reads.is_empty(), "neither the commit nor its trees are read again: {:?}", fake.reads);
    fake.reads.clear();
    assert_eq!(fake.ok_cached(&format!("ls {dir} sub/deep"), &trees), format!("100644 blob {deep}\tsub/deep\n"));
    assert!(fake.reads.is_empty(), "a tree named directly is found by id too");
}

#[test]
fn a_stream_blob_is_never_taken_from_the_tree_cache() {
    // Only a hash collision or a replace ref could give a stream blob a cached tree's id; the stream's view
    // (the blob) wins all the same, as it does without a cache.
    let Repo { mut fake, dir, root, .. } = repo();
    let trees = TreeCache::default();
    fake.ok_cached(&format!("ls {root} dir/y"), &trees);
    fake.stream.insert(dir);
    fake.reads.clear();
    let line = format!("ls {root} dir/y");
    let arg = line.strip_prefix("ls ").unwrap().as_bytes();
    let err = ls(line.as_bytes(), arg, &mut fake, &trees, &LsOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), format!("not a tree: {dir}"));
    fake.stream.insert(root);
    fake.reads.clear();
    let _ = ls(line.as_bytes(), arg, &mut fake, &trees, &LsOptions::default());
    assert_eq!(fake.reads, vec![root], "read as the stream has it, not from the cache");
}

#[test]
fn peeling_steps_are_kept_but_never_for_a_stream_blob() {
    let Repo { mut fake, file, root, commit, .. } = repo();
    let tag = fake.tag(commit, "commit");
    let trees = TreeCache::default();
    fake.ok_cached(&format!("ls {tag} file"), &trees);
    assert_eq!(fake.reads, vec![tag, commit, root]);
    fake.reads.clear();
    assert_eq!(fake.ok_cached(&format!("ls {tag} file"), &trees), format!("100644 blob {file}\tfile\n"));
    assert!(fake.reads.is_empty(), "tag and commit peeled from the cache: {:?}", fake.reads);
    // Were the commit's id a stream blob's, the stream's blob is what git reads.
    fake.stream.insert(commit);
    fake.objects.insert(commit, Object { kind: Kind::Blob, data: Data::new(b"blob".to_vec()) });
    let line = format!("ls {tag} file");
    let arg = line.strip_prefix("ls ").unwrap().as_bytes();
    let err = ls(line.as_bytes(), arg, &mut fake, &trees, &LsOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), format!("not a tree-ish: {line}"));
}

#[test]
fn a_peeling_cycle_is_found_through_the_cache_too() {
    let mut fake = Fake::new(SHA1);
    let a = ObjectId::from_hex(b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").unwrap();
    let b = ObjectId::from_hex(b"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb").unwrap();
    let tag = |target: ObjectId| Object { kind: Kind::Tag, data: Data::new(format!("object {target}\n").into_bytes()) };
    fake.objects.insert(a, tag(b));
    fake.objects.insert(b, tag(a));
    let trees = TreeCache::default();
    let line = format!("ls {a} x");
    let arg = line.strip_prefix("ls ").unwrap().as_bytes();
    for _ in 0..2 {
        let err = ls(line.as_bytes(), arg, &mut fake, &trees, &LsOptions::default()).unwrap_err();
        assert!(matches!(err, LsError::PeelCycle(_)), "{err}");
    }
}
