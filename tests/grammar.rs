//! The fast-import read grammar, case by case, through the differential runner in [`crate::util::case`]: the
//! line reader, `data`, `blob`, marks and `get-mark`, top-level `ls`, `feature`/`option`, git fast-import's
//! command-line flags, marks files, and `progress`/`checkpoint`/`done`. Each case also states what git itself
//! does (exit status, and a piece or the whole of its first stderr line).

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::case::{
    Case, Checks, Source, blob_id, case, cases, expand, expand_str, expand_with, fixture_ids, git_init_bare,
    sha1_blob_id, throwaway,
};
use crate::util::{CAT_BLOBD, Fixture, Rng, Run, TempDir, assert_bytes_eq, clean_git_env, escape, git_in, read_all};

// ---------------------------------------------------------------------------------------------------------------
// Repositories

/// A small repository with nested annotated tags, a tag to a blob, a symlink, an executable, a gitlink and a
/// quoted name, written by `git fast-import` with pinned dates in the given hash.
struct TagsRepo {
    _dir: TempDir,
    git_dir: PathBuf,
    sha256: bool,
    ids: HashMap<&'static str, String>,
}

impl TagsRepo {
    fn new(sha256: bool) -> TagsRepo {
        let dir = TempDir::new(if sha256 { "tags-sha256" } else { "tags-sha1" });
        let git_dir = dir.path().join("src.git");
        git_init_bare(&git_dir, sha256);
        let gitlink = "1".repeat(if sha256 { 64 } else { 40 });
        let ident = "C O Mitter <committer@example.com> 1700000000 +0000";
        let stream = format!(
            "blob\nmark :1\ndata 13\nhello, world\n\n\
             blob\nmark :2\ndata <<EOF\n#!/bin/sh\necho hi\nEOF\n\
             commit refs/heads/main\nmark :10\nauthor {ident}\ncommitter {ident}\ndata 5\ninit\n\
             M 100644 :1 README.md\nM 100755 :2 run.sh\nM 120000 inline link\ndata 9\nREADME.md\n\
             M 100644 :1 \"dir/t\\303\\251st\\tname\"\nM 100644 :2 dir/sub/deep.txt\nM 160000 {gitlink} sub\n\n\
             tag v1\nmark :20\nfrom :10\ntagger {ident}\ndata 4\ntag\n\
             tag v1-nested\nmark :21\nfrom :20\ntagger {ident}\ndata 7\nnested\n\
             tag blob-tag\nmark :22\nfrom :1\ntagger {ident}\ndata 9\nblob tag\n\
             done\n"
        );
        git_in(&git_dir, &["fast-import", "--quiet"], stream.as_bytes());
        let mut ids = HashMap::new();
        for (name, rev) in [
            ("t_blob", "main:README.md"),
            ("t_script", "main:run.sh"),
            ("t_commit", "main"),
            ("t_tree", "main^{tree}"),
            ("t_dir", "main:dir"),
            ("t_tag", "refs/tags/v1"),
            ("t_nested", "refs/tags/v1-nested"),
            ("t_blob_tag", "refs/tags/blob-tag"),
        ] {
            let out = git_in(&git_dir, &["rev-parse", "--verify", rev], b"");
            ids.insert(name, String::from_utf8(out).expect("hex").trim_end().to_owned());
        }
        let kind = if sha256 { gix_hash::Kind::Sha256 } else { gix_hash::Kind::Sha1 };
        ids.insert("t_missing", format!("{}1", "0".repeat(kind.len_in_hex() - 1)));
        ids.insert("t_empty_tree", gix_hash::ObjectId::empty_tree(kind).to_hex().to_string());
        ids.insert("t_empty_blob", blob_id(kind, b""));
        ids.insert("t_abc", blob_id(kind, b"abc"));
        TagsRepo { _dir: dir, git_dir, sha256, ids }
    }

    fn source(&self) -> Source {
        Source::Extra { objects: vec![self.git_dir.join("objects")], sha256: self.sha256 }
    }

    fn expand(&self, template: &str) -> Vec<u8> {
        let mut ids = fixture_ids().clone();
        ids.extend(self.ids.iter().map(|(k, v)| (*k, v.clone())));
        expand_with(template.as_bytes(), &ids)
    }
}

// ---------------------------------------------------------------------------------------------------------------
// 1. The line reader: LF-only lines, comments, NUL, the last line, the stale buffer at EOF

cases! {
    comments_between_commands_and_blob_header_lines:
        b"# first\nblob\n# between blob and mark\nmark :1\n# between mark and data\ndata 3\nabc\n#\nget-mark :1\n\
          # x\ncat-blob :1\n# last line, no LF" => 0, "";
    comment_like_line_in_data_is_data:
        b"blob\nmark :1\ndata 8\n# c\ndonecat-blob :1\n" => 0, "";
    blank_line_is_unsupported: b"cat-blob {blob}\n\ncat-blob {blob2}\n" => 128, "fatal: unsupported command: ";
    last_line_without_lf_is_processed: b"cat-blob {blob2}\ncat-blob {blob}" => 0, "";
    cr_is_an_ordinary_byte: b"cat-blob {blob}\r\ncat-blob {blob2}\n" => 128, "fatal: garbage after SHA1: cat-blob {blob}?";
    crlf_get_mark_is_garbage: b"blob\nmark :1\ndata 0\nget-mark :1\r\n" => 128, "fatal: garbage after mark: get-mark :1?";
    nul_cuts_blob_mark_and_data_lines:
        b"blob\0junk\nmark :1\0junk\ndata 3\0junk 99\nabcget-mark :1\0 junk\ncat-blob :1\0junk\n" => 0, "";
    nul_cuts_checkpoint_and_done: b"cat-blob {blob2}\ncheckpoint\0x\ncat-blob {blob2}\ndone\0x\ncat-blob {blob}\n" => 0, "";
    nul_cuts_cat_blob_by_mark: b"blob\nmark :1\ndata 3\nabc\ncat-blob :1\0:2\n" => 0, "";
    nul_at_line_start_is_an_empty_command: b"cat-blob {blob2}\n\0cat-blob {blob}\n" => 128, "fatal: unsupported command: ";
    nul_cuts_feature_line: b"feature done\0 and junk\ncat-blob {blob2}\ndone\n" => 0, "";
    nul_cuts_option_line: b"option git depth=5\0junk\ncat-blob {blob2}\n" => 0, "";
    nul_cuts_ls_path: b"ls {tree} README.md\0junk\nls {tree} src\0/main.c\n" => 0, "";
    nul_cuts_unsupported_command_in_message: b"bogus\0hidden\n" => 128, "fatal: unsupported command: bogus";
    nul_in_delimiter_counts_for_its_length:
        b"blob\nmark :1\ndata <<EOF\0x\nEOF\nEOF\0zz\nline\0with nul\nEOF\0y\ncat-blob :1\n" => 0, "";
    nul_in_delimiter_eof_message: b"blob\ndata <<EOF\0x\nEOF\n" => 128, "fatal: EOF in data (terminator 'EOF' not found)";
    stale_buffer_blob_at_eof_with_lf: b"blob\n" => 128, "fatal: expected 'data n' command, found: ";
    stale_buffer_blob_at_eof_without_lf: b"blob" => 128, "fatal: expected 'data n' command, found: blob";
    stale_buffer_mark_at_eof_with_lf: b"blob\nmark :1\n" => 128, "fatal: expected 'data n' command, found: ";
    stale_buffer_mark_at_eof_without_lf: b"blob\nmark :1" => 128, "fatal: expected 'data n' command, found: mark :1";
    stale_buffer_original_oid_at_eof_without_lf:
        b"blob\nmark :1\noriginal-oid abc" => 128, "fatal: expected 'data n' command, found: original-oid abc";
    stale_buffer_comment_at_eof_without_lf: b"blob\n# c" => 128, "fatal: expected 'data n' command, found: # c";
    blob_with_argument_is_unsupported: b"blob x\n" => 128, "fatal: unsupported command: blob x";
    blob_trailing_space_is_unsupported: b"blob \n" => 128, "fatal: unsupported command: blob ";
    capitalised_command_is_unsupported: b"Blob\n" => 128, "fatal: unsupported command: Blob";
    get_mark_without_space_is_unsupported: b"get-mark\n" => 128, "fatal: unsupported command: get-mark";
    ls_without_space_is_unsupported: b"ls\n" => 128, "fatal: unsupported command: ls";
    leading_space_is_unsupported: b" get-mark :1\n" => 128, "fatal: unsupported command:  get-mark :1";
    control_bytes_in_message_become_question_marks: b"x\x1b[1m\x7f\t\x01\n" => 128, "fatal: unsupported command: x?[1m?\t?";
}

/// git prints the stream's bytes in its messages raw, valid UTF-8 or not; so must cat-blobd, in `fatal:` and
/// `error:` lines alike. Each case states (a part of) git's line and that it holds `raw`, and the first stderr
/// line is compared byte for byte (ASCII case aside) with git's.
#[test]
fn messages_carry_the_streams_bytes_raw() {
    // The UTF-8 of U+10FF80, a char cat-blobd reserves to carry raw bytes inside its messages.
    const RESERVED: &[u8] = b"\xf4\x8f\xbe\x80";
    let long = [b"x".repeat(4000), b"\xff".repeat(200), b"\n".to_vec()].concat();
    let cases: Vec<(&str, Vec<u8>, &[u8], &str)> = vec![
        ("invalid dataref", b"cat-blob \xff\xfe\n".to_vec(), b"\xff\xfe", "invalid dataref: cat-blob "),
        ("unknown command", b"\xff\xfebogus\n".to_vec(), b"\xff\xfebogus", "unsupported command: "),
        ("bad feature", b"feature \xe9t\xe9\n".to_vec(), b"\xe9t\xe9.", "does not support feature "),
        ("bad option", b"option git \xc3\n".to_vec(), b"\xc3", "does not support option: "),
        ("garbage after a mark", b"get-mark :1\xff\n".to_vec(), b":1\xff", "garbage after mark: get-mark "),
        ("garbage after an id", b"cat-blob {blob}\x80\n".to_vec(), b"\x80", "garbage after SHA1: "),
        ("ls of a blob", b"blob\nmark :1\ndata 1\nx\nls :1 \xff\n".to_vec(), b":1 \xff", "not a tree-ish: ls "),
        ("a reserved char", [RESERVED, b" and \xff\n"].concat(), RESERVED, "unsupported command: "),
        ("a line longer than git's buffer", long, b"x\xff\xff", "unsupported command: xxx"),
    ];
    let mut checks = Checks::default();
    for (what, stream, raw, message) in cases {
        checks.run(what, || {
            let git = case(what, stream).expect(128, message);
            let line = git.first_stderr_line();
            assert!(
                line.windows(raw.len()).any(|w| w == raw),
                "{what}: git's line lacks the raw bytes: {}",
                escape(line)
            );
        });
    }
    case("corrupt mark line", "cat-blob {blob2}\n")
        .raw_file("in.marks", b":1 \xff\xfe\n".to_vec())
        .args(&["--import-marks=in.marks"])
        .check(&mut checks, 128, "corrupt mark line: :1 ");
    case("an error: line", b"feature export-marks=\xff/x\ncat-blob {blob2}\n")
        .args(&["--allow-unsafe-features"])
        .prepare(|repo| fs::write(repo.join(std::ffi::OsStr::from_bytes(b"\xff")), b"").expect("write"))
        .check(&mut checks, 1, "unable to create leading directories of ");
    checks.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// 1. `data`: strtoumax counts, delimited bodies, the optional LF, EOF

cases! {
    data_count_trailing_junk: b"blob\nmark :1\ndata 3x\nabc\ncat-blob :1\n" => 0, "";
    data_count_not_a_number_is_zero: b"blob\nmark :1\ndata abc\ncat-blob :1\n" => 0, "";
    data_count_two_spaces: b"blob\nmark :1\ndata  3\nabc\ncat-blob :1\n" => 0, "";
    data_count_tab: b"blob\nmark :1\ndata \t3\nabc\ncat-blob :1\n" => 0, "";
    data_count_plus_sign: b"blob\nmark :1\ndata +3\nabc\ncat-blob :1\n" => 0, "";
    data_count_leading_zeros_are_decimal: b"blob\nmark :1\ndata 010\n0123456789\ncat-blob :1\n" => 0, "";
    data_count_hex_prefix_is_zero: b"blob\nmark :1\ndata 0x3\nabc\n" => 128, "fatal: unsupported command: abc";
    data_count_empty: b"blob\nmark :1\ndata \ncat-blob :1\n" => 0, "";
    data_without_space: b"blob\nmark :1\ndata\n" => 128, "fatal: expected 'data n' command, found: data";
    data_capitalised: b"blob\nDATA 3\nabc\n" => 128, "fatal: expected 'data n' command, found: DATA 3";
    data_count_negative_saturates: b"blob\ndata -1\nabc" => 128, "fatal: EOF in data (18446744073709551612 bytes remaining)";
    data_count_overflow_saturates:
        b"blob\ndata 99999999999999999999999\nabc" => 128, "fatal: EOF in data (18446744073709551612 bytes remaining)";
    data_ten_gigabytes_declared_three_sent:
        b"cat-blob {blob2}\nblob\nmark :1\ndata 10737418240\nabc" => 128, "fatal: EOF in data (10737418237 bytes remaining)";
    data_eof_in_small_body: b"blob\ndata 10\nabc" => 128, "fatal: EOF in data (7 bytes remaining)";
    data_eof_right_after_header: b"blob\ndata 5\n" => 128, "fatal: EOF in data (5 bytes remaining)";
    data_eof_right_after_header_without_lf: b"blob\ndata 5" => 128, "fatal: EOF in data (5 bytes remaining)";
    data_exact_body_at_eof: b"cat-blob {blob2}\nblob\nmark :1\ndata 3\nabc" => 0, "";
    data_followed_by_command_on_same_line: b"blob\nmark :1\ndata 3\nabcget-mark :1\ncat-blob :1\n" => 0, "";
    data_followed_by_cat_blob_on_same_line: b"blob\nmark :1\ndata 3\nabccat-blob :1\nget-mark :1\n" => 0, "";
    data_optional_lf_then_blank_line: b"blob\nmark :1\ndata 3\nabc\n\ncat-blob :1\n" => 128, "fatal: unsupported command: ";
    data_followed_by_cr: b"blob\nmark :1\ndata 3\nabc\r\ncat-blob :1\n" => 128, "fatal: unsupported command: ?";
    data_body_with_cr_lf_and_nul: b"blob\nmark :1\ndata 7\na\r\nb\0\n\r\ncat-blob :1\n" => 0, "";
    data_body_looks_like_commands: b"blob\nmark :1\ndata 31\ndone\ncat-blob :9\nfeature done\n\ncat-blob :1\n" => 0, "";
    delimited_data: b"blob\nmark :1\ndata <<EOF\nline 1\n\nline 3\nEOF\ncat-blob :1\n" => 0, "";
    delimited_data_cr_in_delimiter: b"blob\nmark :1\ndata <<EOF\r\nx\nEOF\nEOF\r\ncat-blob :1\n" => 0, "";
    delimited_data_empty_delimiter_ends_at_empty_line: b"blob\nmark :1\ndata <<\nx\ny\n\ncat-blob :1\n" => 0, "";
    delimited_data_no_lines: b"blob\nmark :1\ndata <<EOF\nEOF\ncat-blob :1\n" => 0, "";
    delimited_data_near_misses_are_data:
        b"blob\nmark :1\ndata <<EOF\nEO\nEOFX\n EOF\nEOF \neof\nEOF\ncat-blob :1\n" => 0, "";
    delimited_data_space_in_delimiter: b"blob\nmark :1\ndata <<END HERE\nEND\nEND HERE\ncat-blob :1\n" => 0, "";
    delimited_data_lines_that_look_like_commands:
        b"blob\nmark :1\ndata <<EOF\n# comment\ndone\ncat-blob :1\nEOF\ncat-blob :1\n" => 0, "";
    delimited_data_with_nul_and_cr_lines: b"blob\nmark :1\ndata <<EOF\na\0b\r\n\r\nEOF\ncat-blob :1\n" => 0, "";
    delimited_data_then_optional_lf: b"blob\nmark :1\ndata <<EOF\nx\nEOF\n\ncat-blob :1\n" => 0, "";
    delimited_data_then_two_blank_lines: b"blob\nmark :1\ndata <<EOF\nx\nEOF\n\n\ncat-blob :1\n" => 128, "fatal: unsupported command: ";
    delimited_data_then_command_on_next_line: b"blob\nmark :1\ndata <<EOF\nx\nEOF\nget-mark :1\n" => 0, "";
    delimited_data_delimiter_without_lf_at_eof: b"cat-blob {blob2}\nblob\nmark :1\ndata <<EOF\nabc\nEOF" => 0, "";
    delimited_data_eof: b"blob\ndata <<EOF\nabc\n" => 128, "fatal: EOF in data (terminator 'EOF' not found)";
    delimited_data_eof_without_lf: b"blob\ndata <<EOF\nabc" => 128, "fatal: EOF in data (terminator 'EOF' not found)";
    delimited_data_eof_empty_delimiter: b"blob\ndata <<\nabc\n" => 128, "fatal: EOF in data (terminator '' not found)";
    delimited_data_eof_cr_delimiter: b"blob\ndata <<EOF\r\nabc\nEOF\n" => 128, "fatal: EOF in data (terminator 'EOF?' not found)";
    delimited_data_eof_right_after_header: b"blob\ndata <<EOF\n" => 128, "fatal: EOF in data (terminator 'EOF' not found)";
}

#[test]
fn data_random_binary_payloads_by_mark_and_id() {
    let mut rng = Rng::new(7);
    let mut stream = Vec::new();
    let mut requests = Vec::new();
    for (mark, len) in [0usize, 1, 2, 255, 256, 4095, 65_536, 1_000_003].into_iter().enumerate() {
        let payload: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        stream.extend_from_slice(format!("blob\nmark :{}\ndata {len}\n", mark + 1).as_bytes());
        stream.extend_from_slice(&payload);
        stream.push(b'\n');
        requests.push(format!("cat-blob :{}\ncat-blob {}\nget-mark :{}\n", mark + 1, sha1_blob_id(&payload), mark + 1));
    }
    stream.extend(requests.concat().bytes());
    case("random binary payloads", "").raw_stream(stream).expect(0, "");
}

#[test]
fn data_every_byte_value_by_mark_and_id() {
    let payload: Vec<u8> = (0..=255u8).chain(b"\r\n\n\r\0".iter().copied()).collect();
    let mut stream = format!("blob\nmark :1\ndata {}\n", payload.len()).into_bytes();
    stream.extend_from_slice(&payload);
    stream.extend_from_slice(format!("cat-blob :1\ncat-blob {}\n", sha1_blob_id(&payload)).as_bytes());
    case("every byte value", "").raw_stream(stream).expect(0, "");
}

/// Blobs past `--stream-blob-memory` go to a temporary file: the answers must not change.
#[test]
fn data_stream_blobs_spill_to_a_temporary_file() {
    let mut rng = Rng::new(11);
    let mut stream = Vec::new();
    let mut ids = Vec::new();
    for (i, len) in [10usize, 5000, 70_000, 0, 300_000, 1, 4096, 4097, 150_000].into_iter().enumerate() {
        let payload: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        stream.extend_from_slice(format!("blob\nmark :{}\ndata {len}\n", i + 1).as_bytes());
        stream.extend_from_slice(&payload);
        ids.push(sha1_blob_id(&payload));
    }
    for round in 0..2 {
        for (i, id) in ids.iter().enumerate() {
            let line = if (i + round) % 2 == 0 { format!("cat-blob :{}\n", i + 1) } else { format!("cat-blob {id}\n") };
            stream.extend_from_slice(line.as_bytes());
        }
    }
    for memory in ["0", "4k", "100k"] {
        case(&format!("--stream-blob-memory={memory}"), "")
            .raw_stream(stream.clone())
            .own_args(&[&format!("--stream-blob-memory={memory}")])
            .args(&["--export-marks=out.marks"])
            .compare("out.marks")
            .expect(0, "");
    }
}

#[test]
fn data_long_delimited_body() {
    let mut stream = b"blob\nmark :1\ndata <<END\n".to_vec();
    for i in 0..20_000 {
        stream.extend_from_slice(format!("line {i} {}\n", "x".repeat(i % 97)).as_bytes());
    }
    stream.extend_from_slice(b"END\ncat-blob :1\n");
    case("long delimited body", "").raw_stream(stream).expect(0, "");
}

// ---------------------------------------------------------------------------------------------------------------
// 2. `blob`: hashing, `original-oid`, readable by mark and by id

cases! {
    blob_readable_by_mark_and_by_id: b"blob\nmark :1\ndata 5\nhello\ncat-blob :1\ncat-blob {id:hello}\nget-mark :1\n" => 0, "";
    blob_without_mark_readable_by_id: b"blob\ndata 5\nhello\ncat-blob {id:hello}\ncat-blob {ID:hello}\n" => 0, "";
    blob_same_content_as_a_repository_blob:
        b"blob\nmark :1\ndata 0\nblob\nmark :2\ndata 10\nno newline\ncat-blob :2\ncat-blob {blob2}\ncat-blob :1\n" => 0, "";
    blob_empty_readable_in_empty_repository: b"cat-blob {empty_blob}\nblob\nmark :1\ndata 0\ncat-blob :1\ncat-blob {empty_blob}\nget-mark :1\n" => 0, "";
    blob_original_oid_after_mark: b"blob\nmark :1\noriginal-oid whatever you like\ndata 3\nabc\nget-mark :1\n" => 0, "";
    blob_original_oid_without_mark: b"blob\noriginal-oid 1234\ndata 3\nabc\ncat-blob {id:abc}\n" => 0, "";
    blob_original_oid_before_mark: b"blob\noriginal-oid x\nmark :1\ndata 3\nabc\n" => 128, "fatal: expected 'data n' command, found: mark :1";
    blob_original_oid_without_space: b"blob\nmark :1\noriginal-oid\ndata 3\nabc\n" => 128, "fatal: expected 'data n' command, found: original-oid";
    blob_mark_without_colon: b"blob\nmark 1\ndata 3\nabc\n" => 128, "fatal: expected 'data n' command, found: mark 1";
    blob_two_marks: b"blob\nmark :1\nmark :2\ndata 3\nabc\n" => 128, "fatal: expected 'data n' command, found: mark :2";
    blob_many_blobs_same_mark_last_wins:
        b"blob\nmark :1\ndata 5\nfirst\nblob\nmark :1\ndata 6\nsecond\ncat-blob :1\nget-mark :1\ncat-blob {id:first}\n" => 0, "";
    blob_then_cat_blob_of_tree_dies_after_it: b"blob\nmark :1\ndata 3\nabc\ncat-blob :1\ncat-blob {tree}\ncat-blob :1\n" => 128, "is a tree but a blob was expected";
}

#[test]
fn blob_empty_from_the_stream_in_the_empty_fixture() {
    case(
        "empty blob, empty fixture",
        "cat-blob {empty_blob}\nblob\nmark :1\ndata 0\ncat-blob :1\ncat-blob {empty_blob}\n",
    )
    .on(Source::Fixture(Fixture::Empty))
    .expect(0, "");
}

#[test]
fn blob_ls_of_a_stream_blob_is_not_a_tree_ish() {
    let mut checks = Checks::default();
    case("ls stream blob", "blob\nmark :1\ndata 3\nabc\ncat-blob :1\nls :1 x\n").check(
        &mut checks,
        128,
        "fatal: not a tree-ish: ls :1 x",
    );
    case("ls stream blob by id", "blob\ndata 3\nabc\nls {id:abc} x\n").check(&mut checks, 128, "not a tree-ish");
    case("ls stream blob, no space", "blob\nmark :1\ndata 3\nabc\nls :1\n").check(
        &mut checks,
        128,
        "fatal: missing space after mark: ls :1",
    );
    case("ls stream blob, mark no space", "blob\nmark :1\ndata 3\nabc\nls :1x\n").check(
        &mut checks,
        128,
        "fatal: missing space after mark: ls :1x",
    );
    checks.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// 3. Marks and `get-mark`

cases! {
    mark_with_leading_space: b"blob\nmark : 1\ndata 3\nabc\nget-mark :1\nget-mark : 1\ncat-blob : 1\n" => 0, "";
    mark_with_plus_sign: b"blob\nmark :+1\ndata 3\nabc\nget-mark :1\nget-mark :+1\ncat-blob :+1\n" => 0, "";
    mark_with_leading_zero: b"blob\nmark :01\ndata 3\nabc\nget-mark :1\nget-mark :001\ncat-blob :01\n" => 0, "";
    mark_negative_saturates:
        b"blob\nmark :-1\ndata 3\nabc\nget-mark :18446744073709551615\nget-mark :-1\ncat-blob :-1\nget-mark :99999999999999999999\n" => 0, "";
    mark_negative_two_is_not_max: b"blob\nmark :-2\ndata 3\nabc\nget-mark :18446744073709551614\nget-mark :-1\n" => 128, "fatal: mark :18446744073709551615 not declared";
    mark_largest_values: b"blob\nmark :18446744073709551614\ndata 1\na\nblob\nmark :4294967296\ndata 1\nb\nblob\nmark :1048576\ndata 1\nc\nget-mark :18446744073709551614\nget-mark :4294967296\nget-mark :1048576\ncat-blob :4294967296\nget-mark :1048577\n" => 128, "fatal: mark :1048577 not declared";
    mark_zero_is_not_stored: b"blob\nmark :0\ndata 3\nabc\ncat-blob {id:abc}\nget-mark :0\n" => 128, "fatal: mark :0 not declared";
    mark_without_digits_is_no_mark: b"blob\nmark :abc\ndata 3\nabc\ncat-blob {id:abc}\nget-mark :0\n" => 128, "fatal: mark :0 not declared";
    mark_trailing_junk_is_ignored: b"blob\nmark :7x\ndata 3\nabc\nget-mark :7\ncat-blob :7\nget-mark :7x\n" => 128, "fatal: garbage after mark: get-mark :7x";
    mark_redefinition_last_wins: b"blob\nmark :1\ndata 1\na\nget-mark :1\nblob\nmark :1\ndata 1\nb\nget-mark :1\ncat-blob :1\n" => 0, "";
    get_mark_without_colon: b"blob\nmark :1\ndata 0\nget-mark 1\n" => 128, "fatal: not a mark: 1";
    get_mark_two_spaces: b"blob\nmark :1\ndata 0\nget-mark  :1\n" => 128, "fatal: not a mark:  :1";
    get_mark_of_an_id: b"get-mark {blob}\n" => 128, "fatal: not a mark: {blob}";
    get_mark_no_value: b"get-mark :\n" => 128, "fatal: no value after ':' in mark: get-mark :";
    get_mark_no_digits: b"get-mark :x\n" => 128, "fatal: no value after ':' in mark: get-mark :x";
    get_mark_trailing_space: b"blob\nmark :1\ndata 0\nget-mark :1 \n" => 128, "fatal: garbage after mark: get-mark :1 ";
    get_mark_trailing_junk: b"blob\nmark :1\ndata 0\nget-mark :1x\n" => 128, "fatal: garbage after mark: get-mark :1x";
    get_mark_undeclared: b"blob\nmark :1\ndata 0\nget-mark :1\nget-mark :2\nget-mark :1\n" => 128, "fatal: mark :2 not declared";
    get_mark_zero: b"get-mark :0\n" => 128, "fatal: mark :0 not declared";
    get_mark_negative_undeclared: b"get-mark :-1\n" => 128, "fatal: mark :18446744073709551615 not declared";
    get_mark_empty_argument: b"get-mark \n" => 128, "fatal: not a mark: ";
    get_mark_has_no_optional_lf: b"blob\nmark :1\ndata 0\nget-mark :1\n\nget-mark :1\n" => 128, "fatal: unsupported command: ";
    cat_blob_has_no_optional_lf: b"cat-blob {blob2}\n\ncat-blob {blob2}\n" => 128, "fatal: unsupported command: ";
    cat_blob_mark_undeclared_after_responses: b"blob\nmark :1\ndata 3\nabc\ncat-blob :1\ncat-blob :2\n" => 128, "fatal: mark :2 not declared";
    cat_blob_mark_forms: b"blob\nmark :1\ndata 3\nabc\ncat-blob : 1\ncat-blob :+1\ncat-blob :01\ncat-blob :1 \n" => 128, "fatal: garbage after mark: cat-blob :1 ";
}

#[test]
fn mark_many_sparse_marks() {
    let mut rng = Rng::new(3);
    let mut stream = Vec::new();
    let mut marks = Vec::new();
    for i in 0..300u64 {
        let mark = match i % 3 {
            0 => i + 1,
            1 => rng.next_u64() >> (rng.below(60) + 1),
            _ => 1024 * i + 7,
        }
        .max(1);
        marks.push(mark);
        stream.extend_from_slice(format!("blob\nmark :{mark}\ndata {}\n{i}\n", i.to_string().len() + 1).as_bytes());
    }
    rng.shuffle(&mut marks);
    for mark in marks {
        stream.extend_from_slice(format!("get-mark :{mark}\ncat-blob :{mark}\n").as_bytes());
    }
    case("many sparse marks", "")
        .raw_stream(stream)
        .args(&["--export-marks=sparse.marks"])
        .compare("sparse.marks")
        .expect(0, "");
}

// ---------------------------------------------------------------------------------------------------------------
// 4. `ls` at the top level with marks, stream blobs and the empty tree (the full `ls` suite is tests/ls.rs)

cases! {
    ls_root_and_entries: b"ls {tree} \nls {commit} README.md\nls {tag} src/main.c\nls {commit} nosuch\nls {tree} \"odd names\"\n" => 0, "";
    ls_mark_of_a_blob_defined_in_stream: b"blob\nmark :3\ndata 0\nls :3 \n" => 128, "fatal: not a tree-ish: ls :3 ";
    ls_undeclared_mark: b"ls :3 x\n" => 128, "fatal: mark :3 not declared";
    ls_has_no_optional_lf: b"ls {tree} README.md\n\nls {tree} README.md\n" => 128, "fatal: unsupported command: ";
    ls_lonely_blob_is_not_a_tree_ish: b"ls {lonely} x\n" => 128, "fatal: not a tree-ish: ls {lonely} x";
}

#[test]
fn ls_empty_tree_in_empty_repository() {
    case("ls empty tree", "ls {empty_tree} \nls {empty_tree} x\nls {empty_tree} /x\ncat-blob {empty_tree}\n")
        .on(Source::Fixture(Fixture::Empty))
        .expect(128, "fatal: object {empty_tree} is a tree but a blob was expected.");
}

#[test]
fn nested_tags_and_tag_to_blob_sha1() {
    let mut checks = Checks::default();
    let repo = TagsRepo::new(false);
    let stream = repo.expand(
        "ls {t_nested} \nls {t_nested} dir\nls {t_tag} link\nls {t_nested} run.sh\nls {t_commit} sub\n\
         ls {t_nested} \"dir/t\\303\\251st\\tname\"\nls {t_nested} dir/sub/deep.txt\ncat-blob {t_blob}\n\
         ls {t_blob_tag} x\n",
    );
    let message = String::from_utf8(repo.expand("fatal: not a tree-ish: ls {t_blob_tag} x")).expect("UTF-8");
    case("nested tags sha1", "").on(repo.source()).raw_stream(stream).check(&mut checks, 128, &message);
    let stream = repo.expand("cat-blob {t_blob}\ncat-blob {t_nested}\n");
    case("cat-blob of a nested tag", "").on(repo.source()).raw_stream(stream).check(
        &mut checks,
        128,
        "is a tag but a blob was expected",
    );
    checks.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// 5. `feature` and `option`

cases! {
    feature_after_comment: b"# generated by a frontend\nfeature done\ndone\n" => 128, "fatal: got feature command 'done' after data command";
    feature_after_progress: b"progress p\nfeature done\ndone\n" => 128, "fatal: got feature command 'done' after data command";
    feature_after_progress_and_its_optional_lf: b"progress p\n\nfeature done\ndone\n" => 128, "fatal: got feature command 'done' after data command";
    feature_after_blank_line: b"\nfeature done\ndone\n" => 128, "fatal: unsupported command: ";
    feature_after_cat_blob: b"cat-blob {blob2}\nfeature cat-blob\n" => 128, "fatal: got feature command 'cat-blob' after data command";
    feature_after_blob: b"blob\ndata 0\nfeature done\n" => 128, "fatal: got feature command 'done' after data command";
    feature_after_checkpoint: b"checkpoint\nfeature done\n" => 128, "fatal: got feature command 'done' after data command";
    option_after_comment: b"# c\noption git quiet\n" => 128, "fatal: got option command 'quiet' after data command";
    option_after_cat_blob: b"cat-blob {blob2}\noption git depth=1\n" => 128, "fatal: got option command 'depth=1' after data command";
    unsupported_option_after_data_is_an_ordering_error: b"cat-blob {blob2}\noption git bogus\n" => 128, "fatal: got option command 'bogus' after data command";
    non_git_options_are_ignored_anywhere:
        b"option foo bar\ncat-blob {blob2}\noption foo bar\noption git\noption cat-blob-fd=1\noption \ncat-blob {blob}\n" => 0, "";
    features_and_options_interleaved:
        b"option foo\nfeature done\noption git quiet\nfeature cat-blob\noption git depth=3\nfeature ls\ncat-blob {blob2}\ndone\n" => 0, "";
    feature_without_space: b"feature\n" => 128, "fatal: unsupported command: feature";
    option_git_with_space_only: b"option git \n" => 128, "fatal: this version of fast-import does not support option: ";
    feature_date_format_raw: b"feature date-format=raw\ncat-blob {blob2}\n" => 0, "";
    feature_date_format_raw_permissive: b"feature date-format=raw-permissive\ncat-blob {blob2}\n" => 0, "";
    feature_date_format_rfc2822: b"feature date-format=rfc2822\ncat-blob {blob2}\n" => 0, "";
    feature_date_format_now: b"feature date-format=now\ncat-blob {blob2}\n" => 0, "";
    feature_date_format_bogus: b"feature date-format=bogus\ncat-blob {blob2}\n" => 128, "fatal: unknown --date-format argument bogus";
    feature_date_format_empty: b"feature date-format=\n" => 128, "fatal: unknown --date-format argument ";
    feature_date_format_without_value: b"feature date-format\n" => 128, "fatal: this version of fast-import does not support feature date-format.";
    feature_import_marks_forbidden: b"feature import-marks=x.marks\ncat-blob {blob2}\n" => 128, "fatal: feature 'import-marks' forbidden in input without --allow-unsafe-features";
    feature_import_marks_if_exists_forbidden: b"feature import-marks-if-exists=x.marks\n" => 128, "fatal: feature 'import-marks-if-exists' forbidden in input without --allow-unsafe-features";
    feature_export_marks_forbidden: b"feature export-marks=x.marks\n" => 128, "fatal: feature 'export-marks=x.marks' forbidden in input without --allow-unsafe-features";
    feature_relative_marks: b"feature relative-marks\nfeature no-relative-marks\ncat-blob {blob2}\n" => 0, "";
    feature_done_with_done: b"feature done\ncat-blob {blob2}\ndone\n" => 0, "";
    feature_force: b"feature force\ncat-blob {blob2}\n" => 0, "";
    feature_read_commands_and_notes: b"feature get-mark\nfeature cat-blob\nfeature ls\nfeature notes\nfeature alias\ncat-blob {blob2}\n" => 0, "";
    feature_unknown: b"feature bogus\ncat-blob {blob2}\n" => 128, "fatal: this version of fast-import does not support feature bogus.";
    feature_ls_with_value: b"feature ls=1\n" => 128, "fatal: this version of fast-import does not support feature ls=1.";
    feature_done_trailing_space: b"feature done \n" => 128, "fatal: this version of fast-import does not support feature done .";
    feature_capitalised: b"feature DONE\n" => 128, "fatal: this version of fast-import does not support feature DONE.";
    feature_empty: b"feature \n" => 128, "fatal: this version of fast-import does not support feature .";
    feature_cr: b"feature done\r\n" => 128, "fatal: this version of fast-import does not support feature done?.";
    feature_rewrite_submodules_without_colon: b"feature rewrite-submodules-to=nocolon\n" => 128, "fatal: expected format name:filename for submodule rewrite option";
    feature_rewrite_submodules_missing_file: b"feature rewrite-submodules-from=sub:nosuch.marks\n" => 128, "fatal: cannot read 'nosuch.marks': No such file or directory";
    option_git_max_pack_size_in_megabytes: b"option git max-pack-size=2000\ncat-blob {blob2}\n" => 0, "warning: max-pack-size is now in bytes, assuming --max-pack-size=2000m";
    option_git_max_pack_size_zero: b"option git max-pack-size=0\ncat-blob {blob2}\n" => 0, "warning: max-pack-size is now in bytes, assuming --max-pack-size=0m";
    option_git_max_pack_size_below_one_mib: b"option git max-pack-size=100000\ncat-blob {blob2}\n" => 0, "warning: minimum max-pack-size is 1 MiB";
    option_git_max_pack_size_8192: b"option git max-pack-size=8192\ncat-blob {blob2}\n" => 0, "warning: minimum max-pack-size is 1 MiB";
    option_git_max_pack_size_units: b"option git max-pack-size=2m\noption git max-pack-size=1g\noption git max-pack-size=0x100000\ncat-blob {blob2}\n" => 0, "";
    option_git_max_pack_size_unit_k_warns: b"option git max-pack-size=9k\n" => 0, "warning: minimum max-pack-size is 1 MiB";
    option_git_max_pack_size_not_a_number: b"option git max-pack-size=abc\n" => 128, "fatal: this version of fast-import does not support option: max-pack-size=abc";
    option_git_max_pack_size_negative: b"option git max-pack-size=-1\n" => 128, "fatal: this version of fast-import does not support option: max-pack-size=-1";
    option_git_max_pack_size_bad_unit: b"option git max-pack-size=1t\n" => 128, "fatal: this version of fast-import does not support option: max-pack-size=1t";
    option_git_big_file_threshold: b"option git big-file-threshold=10m\ncat-blob {blob2}\n" => 0, "";
    option_git_big_file_threshold_not_a_number: b"option git big-file-threshold=big\n" => 128, "fatal: this version of fast-import does not support option: big-file-threshold=big";
    option_git_big_file_threshold_tiny_streams_blobs:
        b"option git big-file-threshold=1\nblob\nmark :1\ndata 5\nhello\ncat-blob :1\ncat-blob {id:hello}\nblob\ndata 9\nabc" => 128, "fatal: EOF in data (6 bytes remaining)";
    option_git_depth: b"option git depth=10\noption git depth=0x10\noption git depth=010\noption git depth=8191\noption git depth= 5\ncat-blob {blob2}\n" => 0, "";
    option_git_depth_too_large: b"option git depth=8192\n" => 128, "fatal: --depth cannot exceed 8191";
    option_git_depth_hex_too_large: b"option git depth=0x2000\n" => 128, "fatal: --depth cannot exceed 8191";
    option_git_depth_negative: b"option git depth=-1\n" => 128, "fatal: --depth: argument must be a non-negative integer";
    option_git_depth_junk: b"option git depth=1x\n" => 128, "fatal: --depth: argument must be a non-negative integer";
    option_git_depth_empty: b"option git depth=\n" => 128, "fatal: --depth: argument must be a non-negative integer";
    option_git_depth_bad_octal: b"option git depth=09\n" => 128, "fatal: --depth: argument must be a non-negative integer";
    option_git_active_branches: b"option git active-branches=5\noption git active-branches=0\ncat-blob {blob2}\n" => 0, "";
    option_git_active_branches_junk: b"option git active-branches=five\n" => 128, "fatal: --active-branches: argument must be a non-negative integer";
    option_git_quiet_and_stats: b"option git stats\noption git quiet\noption git stats\ncat-blob {blob2}\n" => 0, "";
    option_git_allow_unsafe_features_is_no_gate: b"option git allow-unsafe-features\nfeature export-marks=x.marks\n" => 128, "fatal: feature 'export-marks=x.marks' forbidden in input without --allow-unsafe-features";
    option_git_date_format_is_not_an_option: b"option git date-format=raw\n" => 128, "fatal: this version of fast-import does not support option: date-format=raw";
    option_git_import_marks_is_not_an_option: b"option git import-marks=x\n" => 128, "fatal: this version of fast-import does not support option: import-marks=x";
    option_git_export_marks_is_not_an_option: b"option git export-marks=x\n" => 128, "fatal: this version of fast-import does not support option: export-marks=x";
    option_git_cat_blob_fd_is_not_an_option: b"option git cat-blob-fd=3\n" => 128, "fatal: this version of fast-import does not support option: cat-blob-fd=3";
    option_git_force_is_not_an_option: b"option git force\n" => 128, "fatal: this version of fast-import does not support option: force";
    option_git_done_is_not_an_option: b"option git done\n" => 128, "fatal: this version of fast-import does not support option: done";
    option_git_bogus: b"option git bogus\n" => 128, "fatal: this version of fast-import does not support option: bogus";
    option_git_quiet_trailing_space: b"option git quiet \n" => 128, "fatal: this version of fast-import does not support option: quiet ";
}

#[test]
fn option_git_export_pack_edges() {
    let mut checks = Checks::default();
    case("export-pack-edges", "option git export-pack-edges=edges.txt\ncat-blob {blob2}\n").check(&mut checks, 0, "");
    case("export-pack-edges, no such dir", "option git export-pack-edges=no/such/dir/edges.txt\ncat-blob {blob2}\n")
        .check(
            &mut checks,
            128,
            "fatal: could not open 'no/such/dir/edges.txt' for writing: No such file or directory",
        );
    checks.finish();
}

#[test]
fn feature_rewrite_submodules_translates_ids() {
    let mut checks = Checks::default();
    let from = format!(":1 {}\n:2 {}\n", "1".repeat(40), "2".repeat(40));
    let to = expand_str(":1 {blob}\n:2 {tree}\n");
    let stream = format!(
        "feature rewrite-submodules-from=sub:from.marks\nfeature rewrite-submodules-to=sub:to.marks\n\
         cat-blob {}\ncat-blob {}\nls {} README.md\ncat-blob {}\nls {} \n",
        "1".repeat(40),
        "1".repeat(40).to_ascii_uppercase(),
        expand_str("{tree}"),
        "3".repeat(40),
        "2".repeat(40),
    );
    case("rewrite-submodules", stream).file("from.marks", from.clone()).file("to.marks", to.clone()).check(
        &mut checks,
        0,
        "",
    );
    let flags = ["--rewrite-submodules-from=sub:from.marks", "--rewrite-submodules-to=sub:to.marks"];
    let stream = format!("cat-blob {}\ncat-blob {}\n", "1".repeat(40), "2".repeat(40));
    case("rewrite-submodules flags", stream)
        .file("from.marks", from.clone())
        .file("to.marks", to.clone())
        .args(&flags)
        .check(&mut checks, 128, "is a tree but a blob was expected");
    case("rewrite-submodules without to", format!("cat-blob {}\n", "1".repeat(40)))
        .file("from.marks", from)
        .args(&flags[..1])
        .check(&mut checks, 128, "fatal: missing to marks for submodule 'sub'");
    // A `to` without its `from` is not checked: nothing is translated.
    case("rewrite-submodules without from", format!("cat-blob {}\n", "1".repeat(40)))
        .file("to.marks", to)
        .args(&flags[1..])
        .check(&mut checks, 0, "");
    checks.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// 5. git fast-import's command-line flags: applied after the leading feature lines, overriding them

fn flag_case(what: &str, flags: &[&str], stream: &str) -> Case {
    case(what, stream).args(flags)
}

#[test]
fn flags_that_are_accepted() {
    let mut checks = Checks::default();
    let stream = "cat-blob {blob2}\n";
    for flags in [
        &["--force"][..],
        &["--depth=0x10"],
        &["--depth=8191"],
        &["--active-branches=3"],
        &["--big-file-threshold=1k"],
        &["--max-pack-size=4g"],
        &["--date-format=rfc2822"],
        &["--ls", "--notes", "--cat-blob", "--get-mark", "--alias"],
        &["--relative-marks", "--no-relative-marks"],
        &["--quiet", "--quiet"],
        &["--allow-unsafe-features"],
        &["--cat-blob-fd=0x3"],
        &["--cat-blob-fd=03"],
        &["--import-marks-if-exists=nosuch.marks"],
    ] {
        flag_case(&format!("flags {flags:?}"), flags, stream).check(&mut checks, 0, "");
    }
    flag_case("--max-pack-size=2000", &["--max-pack-size=2000"], stream).check(
        &mut checks,
        0,
        "warning: max-pack-size is now in bytes, assuming --max-pack-size=2000m",
    );
    checks.finish();
}

#[test]
fn flags_that_are_fatal() {
    let mut checks = Checks::default();
    let stream = "feature done\ncat-blob {blob2}\ndone\n";
    for (flags, message) in [
        (&["--depth=9000"][..], "fatal: --depth cannot exceed 8191"),
        (&["--depth"], "fatal: unknown option --depth"),
        (&["--depth=-3"], "fatal: --depth: argument must be a non-negative integer"),
        (&["-q"], "fatal: unknown option -q"),
        (&["--bogus"], "fatal: unknown option --bogus"),
        (&["--done=yes"], "fatal: unknown option --done=yes"),
        (&["--cat-blob-fd=abc"], "fatal: --cat-blob-fd: argument must be a non-negative integer"),
        (&["--cat-blob-fd=-1"], "fatal: --cat-blob-fd: argument must be a non-negative integer"),
        (&["--cat-blob-fd="], "fatal: --cat-blob-fd: argument must be a non-negative integer"),
        (&["--cat-blob-fd=2147483648"], "fatal: --cat-blob-fd cannot exceed 2147483647"),
        (&["--date-format=bogus"], "fatal: unknown --date-format argument bogus"),
        (&["--max-pack-size=abc"], "fatal: unknown option --max-pack-size=abc"),
        (&["--active-branches=x"], "fatal: --active-branches: argument must be a non-negative integer"),
        (&["--import-marks=nosuch.marks"], "fatal: cannot read 'nosuch.marks': No such file or directory"),
        (&["--force", "--bogus", "--done"], "fatal: unknown option --bogus"),
    ] {
        flag_case(&format!("flags {flags:?}"), flags, stream).check(&mut checks, 128, message);
    }
    checks.finish();
}

#[test]
fn flag_positional_argument_is_usage() {
    let mut checks = Checks::default();
    // cat-blobd prints its own usage text: compare the status and the output only.
    for flags in [&["foo"][..], &["--done", "foo"], &["--"], &["--done", "--", "--force"]] {
        flag_case(&format!("positional {flags:?}"), flags, "cat-blob {blob2}\n").ignore_stderr().check(
            &mut checks,
            129,
            "",
        );
    }
    checks.finish();
}

#[test]
fn flag_errors_come_after_leading_features() {
    let mut checks = Checks::default();
    flag_case("--bogus after feature bogus", &["--bogus"], "feature bogus\ncat-blob {blob2}\n").check(
        &mut checks,
        128,
        "fatal: this version of fast-import does not support feature bogus.",
    );
    flag_case("--bogus after features", &["--bogus"], "feature done\noption git quiet\ncat-blob {blob2}\ndone\n")
        .check(&mut checks, 128, "fatal: unknown option --bogus");
    flag_case("--bogus on an empty stream", &["--bogus"], "").check(&mut checks, 128, "fatal: unknown option --bogus");
    flag_case("--bogus on features only", &["--bogus"], "feature done\n").check(
        &mut checks,
        128,
        "fatal: unknown option --bogus",
    );
    flag_case("--bogus before a comment", &["--bogus"], "# c\n").check(
        &mut checks,
        128,
        "fatal: unknown option --bogus",
    );
    checks.finish();
}

#[test]
fn flag_done() {
    let mut checks = Checks::default();
    flag_case("--done with done", &["--done"], "cat-blob {blob2}\ndone\n").check(&mut checks, 0, "");
    flag_case("--done without done", &["--done"], "cat-blob {blob2}\ncat-blob {blob}\n").check(
        &mut checks,
        128,
        "fatal: stream ends early",
    );
    flag_case("--done, done without LF", &["--done"], "cat-blob {blob2}\ndone").check(
        &mut checks,
        128,
        "fatal: stream ends early",
    );
    flag_case("--done, empty stream", &["--done"], "").check(&mut checks, 128, "fatal: stream ends early");
    checks.finish();
}

#[test]
fn flag_cat_blob_fd_overrides() {
    let mut checks = Checks::default();
    // `option cat-blob-fd=…` is not a git option: it is ignored, wherever it is.
    case("option cat-blob-fd=3 ignored", "option cat-blob-fd=3\ncat-blob {blob2}\nprogress p\n")
        .responses_on_stdout()
        .check(&mut checks, 0, "");
    case("option cat-blob-fd=1 ignored with --cat-blob-fd=3", "option cat-blob-fd=1\ncat-blob {blob2}\nprogress p\n")
        .check(&mut checks, 0, "");
    // The last --cat-blob-fd wins: responses go back to stdout (a file here), between the progress lines.
    case("--cat-blob-fd=3 --cat-blob-fd=1", "progress a\ncat-blob {blob2}\nprogress b\n")
        .args(&["--cat-blob-fd=1"])
        .check(&mut checks, 0, "");
    checks.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// 6. Marks files

const FOUR_MARKS: &str = ":1 {blob}\n:2 {commit}\n:3 {tree}\n:4 {tag}\n";
const USE_FOUR_MARKS: &str = "get-mark :1\nget-mark :2\nget-mark :3\nget-mark :4\ncat-blob :1\nls :2 README.md\nls :4 src\nls :3 \ncat-blob :3\n";

#[test]
fn marks_import_every_object_type() {
    case("import every type", USE_FOUR_MARKS)
        .file("in.marks", FOUR_MARKS)
        .args(&["--import-marks=in.marks", "--export-marks=out.marks"])
        .compare("out.marks")
        .compare("in.marks")
        .expect(128, "fatal: object {tree} is a tree but a blob was expected.");
}

#[test]
fn marks_import_and_export_same_file() {
    let stream = "blob\nmark :2\ndata 3\nabc\nblob\nmark :10\ndata 0\nget-mark :5\ncat-blob :2\n";
    case("import and export one file", stream)
        .file("io.marks", ":5 {commit}\n:03 {blob}\n:2 {tree}\n:7 {blob2}junk\n:9 {BLOB}\r\n")
        .args(&["--import-marks=io.marks", "--export-marks=io.marks"])
        .compare("io.marks")
        .expect(0, "");
}

/// `name: marks file => code, "message";` — `--import-marks=in.marks` with that file, then a stream that uses
/// marks 1 and 2 and exports the marks.
macro_rules! import_cases {
    ($($name:ident: $file:expr => $code:literal, $message:literal;)*) => {$(
        #[test]
        fn $name() {
            case(stringify!($name), "cat-blob {blob2}\nget-mark :1\ncat-blob :1\n")
                .file("in.marks", $file)
                .args(&["--import-marks=in.marks", "--export-marks=out.marks"])
                .compare("out.marks")
                .expect($code, $message);
        }
    )*};
}

import_cases! {
    marks_import_plain: b":1 {blob}\n" => 0, "";
    marks_import_empty_file: b"" => 128, "fatal: mark :1 not declared";
    marks_import_later_lines_override: b":1 {blob}\n:1 {blob2}\n" => 0, "";
    marks_import_upper_case_hex: b":1 {BLOB}\n" => 0, "";
    marks_import_leading_space_in_number: b": 1 {blob}\n" => 0, "";
    marks_import_leading_zeros: b":001 {blob}\n" => 0, "";
    marks_import_plus_sign: b":+1 {blob}\n" => 0, "";
    marks_import_negative_mark_saturates: b":-1 {blob}\n:1 {blob2}\n" => 0, "";
    marks_import_junk_after_hex: b":1 {blob} and junk\n" => 0, "";
    marks_import_cr_lf: b":1 {blob}\r\n" => 0, "";
    marks_import_no_final_lf: b":1 {blob}" => 128, "fatal: corrupt mark line: :1 {blob}";
    marks_import_second_line_no_final_lf: b":2 {blob}\n:1 {blob}" => 128, "fatal: corrupt mark line: :1 {blob}";
    marks_import_mark_zero: b":0 {blob}\n" => 128, "fatal: corrupt mark line: :0 {blob}";
    marks_import_no_number: b":x {blob}\n" => 128, "fatal: corrupt mark line: :x {blob}";
    marks_import_two_spaces: b":1  {blob}\n" => 128, "fatal: corrupt mark line: :1  {blob}";
    marks_import_tab: b":1\t{blob}\n" => 128, "fatal: corrupt mark line: :1\t{blob}";
    marks_import_short_hex: b":1 9e770e557600ef03384da0a48d62a6ad3c4dfe5\n" => 128, "fatal: corrupt mark line: :1 9e770e557600ef03384da0a48d62a6ad3c4dfe5";
    marks_import_empty_line: b":1 {blob}\n\n" => 128, "fatal: corrupt mark line: ";
    marks_import_no_colon: b"1 {blob}\n" => 128, "fatal: corrupt mark line: 1 {blob}";
    marks_import_text: b"xyz\n" => 128, "fatal: corrupt mark line: xyz";
    marks_import_missing_object: b":1 {blob}\n:2 {missing}\n" => 128, "fatal: object not found: {missing}";
    marks_import_null_id: b":1 0000000000000000000000000000000000000000\n" => 128, "fatal: object not found: 0000000000000000000000000000000000000000";
    marks_import_sha256_line_in_sha1_repository:
        b":1 {blob}{blob}\n" => 128, "fatal: object not found: {blob}9e770e557600ef03384da0a4";
}

#[test]
fn marks_import_long_lines() {
    let mut checks = Checks::default();
    let id = expand_str("{blob}");
    // fgets reads 511 bytes at a time: a 511-byte line (LF included) is fine, a longer one is cut and corrupt.
    let fits = format!(":1 {id}{}\n", " ".repeat(511 - 3 - 40 - 1));
    assert_eq!(fits.len(), 511);
    case("511-byte marks line", "get-mark :1\n")
        .raw_file("in.marks", fits.into_bytes())
        .args(&["--import-marks=in.marks"])
        .check(&mut checks, 0, "");
    let long = format!(":1 {id}{}\n", " ".repeat(600));
    let shown = format!("fatal: corrupt mark line: {}", &long[..511]);
    case("long marks line", "get-mark :1\n")
        .raw_file("in.marks", long.into_bytes())
        .args(&["--import-marks=in.marks"])
        .check(&mut checks, 128, &shown);
    checks.finish();
}

#[test]
fn marks_import_missing_file() {
    let mut checks = Checks::default();
    case("--import-marks missing", "cat-blob {blob2}\n")
        .args(&["--import-marks=nosuch.marks", "--export-marks=out.marks"])
        .compare("out.marks")
        .check(&mut checks, 128, "fatal: cannot read 'nosuch.marks': No such file or directory");
    case("--import-marks-if-exists missing", "cat-blob {blob2}\n")
        .args(&["--import-marks-if-exists=nosuch.marks", "--export-marks=out.marks"])
        .compare("out.marks")
        .check(&mut checks, 0, "");
    case("--import-marks-if-exists present", "get-mark :1\n")
        .file("in.marks", ":1 {blob}\n")
        .args(&["--import-marks-if-exists=in.marks"])
        .check(&mut checks, 0, "");
    case("--import-marks-if-exists of a directory", "get-mark :1\n")
        .prepare(|repo| fs::create_dir(repo.join("d.marks")).expect("mkdir"))
        .args(&["--import-marks-if-exists=d.marks"])
        .check(&mut checks, 128, "fatal: cannot read 'd.marks': Is a directory");
    case("--import-marks of a directory", "get-mark :1\n").args(&["--import-marks=."]).check(
        &mut checks,
        128,
        "fatal: cannot read '.': Is a directory",
    );
    checks.finish();
}

#[test]
fn marks_import_features() {
    let mut checks = Checks::default();
    case("feature import-marks", "feature import-marks=in.marks\nget-mark :1\n")
        .file("in.marks", ":1 {blob}\n")
        .args(&["--allow-unsafe-features"])
        .check(&mut checks, 0, "");
    case("feature import-marks-if-exists missing", "feature import-marks-if-exists=nosuch\ncat-blob {blob2}\n")
        .args(&["--allow-unsafe-features"])
        .check(&mut checks, 0, "");
    case("feature import-marks missing", "feature import-marks=nosuch\ncat-blob {blob2}\n")
        .args(&["--allow-unsafe-features"])
        .check(&mut checks, 128, "fatal: cannot read 'nosuch': No such file or directory");
    case("feature import-marks twice", "feature import-marks=in.marks\nfeature import-marks=in.marks\n")
        .file("in.marks", ":1 {blob}\n")
        .args(&["--allow-unsafe-features"])
        .check(&mut checks, 128, "fatal: only one import-marks command allowed per stream");
    case("feature import-marks then -if-exists", "feature import-marks=in.marks\nfeature import-marks-if-exists=x\n")
        .args(&["--allow-unsafe-features"])
        .check(&mut checks, 128, "fatal: only one import-marks command allowed per stream");
    // The command line replaces the stream's file, which is then never read.
    case("--import-marks replaces the feature", "feature import-marks=nosuch\nget-mark :1\n")
        .file("in.marks", ":1 {blob}\n")
        .args(&["--allow-unsafe-features", "--import-marks=in.marks"])
        .check(&mut checks, 0, "");
    // Two files on the command line: the first is read when the second is seen, later lines win.
    case("two --import-marks", "get-mark :1\nget-mark :2\n")
        .file("a.marks", ":1 {blob}\n:2 {blob}\n")
        .file("b.marks", ":2 {blob2}\n")
        .args(&["--import-marks=a.marks", "--import-marks=b.marks", "--export-marks=out.marks"])
        .compare("out.marks")
        .check(&mut checks, 0, "");
    case("two --import-marks, first missing", "get-mark :1\n")
        .file("b.marks", ":1 {blob2}\n")
        .args(&["--import-marks=nosuch.marks", "--import-marks=b.marks"])
        .check(&mut checks, 128, "fatal: cannot read 'nosuch.marks': No such file or directory");
    case("two --import-marks, first corrupt", "get-mark :1\n")
        .file("a.marks", ":0 {blob}\n")
        .file("b.marks", ":1 {blob2}\n")
        .args(&["--import-marks=a.marks", "--import-marks=b.marks"])
        .check(&mut checks, 128, "fatal: corrupt mark line: :0 {blob}");
    checks.finish();
}

#[test]
fn marks_export() {
    let mut checks = Checks::default();
    let stream = "blob\nmark :10\ndata 1\na\nblob\nmark :2\ndata 1\nb\nblob\nmark :1048576\ndata 1\nc\nblob\nmark :3\ndata 0\n\
                  blob\nmark :4294967296\ndata 1\nd\nblob\nmark :-1\ndata 1\ne\nblob\nmark :1024\ndata 1\nf\n";
    case("export sorted", stream).args(&["--export-marks=out.marks"]).compare("out.marks").check(&mut checks, 0, "");
    case("export empty", "cat-blob {blob2}\n").args(&["--export-marks=out.marks"]).compare("out.marks").check(
        &mut checks,
        0,
        "",
    );
    case("export creates directories", "blob\nmark :1\ndata 0\n")
        .args(&["--export-marks=a/b/c.marks"])
        .compare("a/b/c.marks")
        .check(&mut checks, 0, "");
    case("export feature", "feature export-marks=f.marks\nblob\nmark :1\ndata 0\n")
        .args(&["--allow-unsafe-features"])
        .compare("f.marks")
        .check(&mut checks, 0, "");
    case("--export-marks replaces the feature", "feature export-marks=f.marks\nblob\nmark :1\ndata 0\n")
        .args(&["--allow-unsafe-features", "--export-marks=c.marks"])
        .compare("f.marks")
        .compare("c.marks")
        .check(&mut checks, 0, "");
    case("export with an absolute path", "blob\nmark :1\ndata 0\n")
        .args(&["--relative-marks", "--export-marks={repo}/abs.marks"])
        .compare("abs.marks")
        .check(&mut checks, 0, "");
    checks.finish();
}

#[test]
fn marks_export_failures_exit_1() {
    let mut checks = Checks::default();
    let stream = "blob\nmark :1\ndata 0\ncat-blob :1\n";
    case("stale lock file", stream)
        .file("out.marks.lock", "someone else's\n")
        .args(&["--export-marks=out.marks"])
        .compare("out.marks")
        .check(&mut checks, 1, "error: unable to write marks file out.marks: File exists");
    case("leading directory is a file", stream)
        .file("a", "a file\n")
        .args(&["--export-marks=a/out.marks"])
        .compare("a")
        .check(&mut checks, 1, "error: unable to create leading directories of a/out.marks: Not a directory");
    case("target is a directory", stream)
        .prepare(|repo| fs::create_dir(repo.join("d")).expect("mkdir"))
        .args(&["--export-marks=d"])
        .compare("d.lock")
        .check(&mut checks, 1, "error: unable to write file d: Is a directory");
    checks.finish();
}

#[test]
fn marks_export_on_fatal_errors() {
    let mut checks = Checks::default();
    let stream =
        "blob\nmark :2\ndata 1\na\nblob\nmark :1\ndata 1\nb\ncat-blob :1\ncat-blob :3\nblob\nmark :4\ndata 0\n";
    case("export after die", stream).args(&["--export-marks=out.marks"]).compare("out.marks").check(
        &mut checks,
        128,
        "fatal: mark :3 not declared",
    );
    case("export at stream ends early", "blob\nmark :1\ndata 0\n")
        .args(&["--done", "--export-marks=out.marks"])
        .compare("out.marks")
        .check(&mut checks, 128, "fatal: stream ends early");
    case("export after EOF in data", "blob\nmark :1\ndata 0\nblob\nmark :2\ndata 9\nabc")
        .args(&["--export-marks=out.marks"])
        .compare("out.marks")
        .check(&mut checks, 128, "fatal: EOF in data (6 bytes remaining)");
    // A die among the leading features comes before the flags are applied: no export file is known yet.
    case("die before the flags", "feature bogus\n").args(&["--export-marks=out.marks"]).compare("out.marks").check(
        &mut checks,
        128,
        "fatal: this version of fast-import does not support feature bogus.",
    );
    // ... unless a feature named it.
    case("die after feature export-marks", "feature export-marks=out.marks\nfeature bogus\n")
        .args(&["--allow-unsafe-features"])
        .compare("out.marks")
        .check(&mut checks, 128, "fatal: this version of fast-import does not support feature bogus.");
    // An import file that is configured but not read yet protects the export file.
    case(
        "import configured, not read",
        "feature import-marks=in.marks\nfeature export-marks=out.marks\nfeature bogus\n",
    )
    .file("in.marks", ":1 {blob}\n")
    .args(&["--allow-unsafe-features"])
    .compare("out.marks")
    .check(&mut checks, 128, "fatal: this version of fast-import does not support feature bogus.");
    checks.finish();
}

/// t9300 `R: corrupt lines do not mess marks file`: the import dies, the same file is not overwritten.
#[test]
fn marks_corrupt_lines_do_not_mess_marks_file() {
    let mut checks = Checks::default();
    let marks = format!(":3 {}\n:1 {}\n:2 {}\n", "0".repeat(40), sha1_blob_id(b"hi\n"), sha1_blob_id(b"hi\n"));
    case("R: corrupt lines do not mess marks file", "\n")
        .raw_file("io.marks", marks.clone().into_bytes())
        .prepare(|repo| {
            git_in(repo, &["hash-object", "-w", "--stdin"], b"hi\n");
        })
        .args(&["--import-marks=io.marks", "--export-marks=io.marks"])
        .compare("io.marks")
        .check(&mut checks, 128, "fatal: object not found: 0000000000000000000000000000000000000000");
    case("corrupt line, same file", "cat-blob {blob2}\n")
        .file("io.marks", ":1 {blob}\n:0 {blob}\n")
        .args(&["--import-marks=io.marks", "--export-marks=io.marks"])
        .compare("io.marks")
        .check(&mut checks, 128, "fatal: corrupt mark line: :0 {blob}");
    checks.finish();
}

#[test]
fn marks_relative_paths() {
    let mut checks = Checks::default();
    let stream = "blob\nmark :1\ndata 0\n";
    case("feature relative-marks", format!("feature relative-marks\nfeature export-marks=rel.marks\n{stream}"))
        .args(&["--allow-unsafe-features"])
        .compare("info/fast-import/rel.marks")
        .compare("rel.marks")
        .check(&mut checks, 0, "");
    case(
        "relative then no-relative",
        format!("feature relative-marks\nfeature no-relative-marks\nfeature export-marks=rel.marks\n{stream}"),
    )
    .args(&["--allow-unsafe-features"])
    .compare("info/fast-import/rel.marks")
    .compare("rel.marks")
    .check(&mut checks, 0, "");
    case("--relative-marks", stream)
        .args(&["--relative-marks", "--export-marks=sub/rel.marks"])
        .compare("info/fast-import/sub/rel.marks")
        .compare("sub/rel.marks")
        .check(&mut checks, 0, "");
    case("--relative-marks applies to later flags only", stream)
        .args(&["--export-marks=rel.marks", "--relative-marks"])
        .compare("info/fast-import/rel.marks")
        .compare("rel.marks")
        .check(&mut checks, 0, "");
    case("stream feature relative-marks applies to the flags", format!("feature relative-marks\n{stream}"))
        .args(&["--export-marks=rel.marks"])
        .compare("info/fast-import/rel.marks")
        .compare("rel.marks")
        .check(&mut checks, 0, "");
    case("relative import", "get-mark :1\n")
        .file("info/fast-import/in.marks", ":1 {blob}\n")
        .args(&["--relative-marks", "--import-marks=in.marks", "--export-marks=in.marks"])
        .compare("info/fast-import/in.marks")
        .check(&mut checks, 0, "");
    case("relative import missing", "get-mark :1\n").args(&["--relative-marks", "--import-marks=in.marks"]).check(
        &mut checks,
        128,
        "fatal: cannot read '<repo>/info/fast-import/in.marks': No such file or directory",
    );
    checks.finish();
}

/// The marks file is written at `checkpoint` (and again at the end): read it while the stream is paused
/// after a checkpoint, through a `progress` line that says the checkpoint is done.
#[test]
fn marks_export_at_checkpoint() {
    let first = expand(b"blob\nmark :2\ndata 1\na\nblob\nmark :1\ndata 0\ncheckpoint\nprogress synced\n");
    let rest = b"blob\nmark :3\ndata 1\nc\n".to_vec();
    let snapshot = |label: &str, mut cmd: Command| -> (Option<Vec<u8>>, Vec<u8>, Option<i32>) {
        let tmp = throwaway(&Source::Fixture(Fixture::Basic), label);
        let repo = &tmp.1;
        clean_git_env(&mut cmd);
        cmd.env("GIT_DIR", repo).current_dir(repo).arg("--export-marks=cp.marks");
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
        let stderr = read_all(child.stderr.take().expect("stderr"));
        let mut stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        stdin.write_all(&first).expect("write first part");
        stdin.flush().expect("flush");
        let started = Instant::now();
        let mut line = Vec::new();
        stdout.read_until(b'\n', &mut line).expect("read progress");
        assert_eq!(line, b"progress synced\n", "{label}: {}", escape(&line));
        assert!(started.elapsed() < Duration::from_secs(60));
        let at_checkpoint = fs::read(repo.join("cp.marks")).ok();
        stdin.write_all(&rest).expect("write the rest");
        drop(stdin);
        let status = child.wait().expect("wait");
        let stderr = stderr.join().expect("stderr");
        assert!(stderr.is_empty(), "{label}: {}", escape(&stderr));
        (at_checkpoint, fs::read(repo.join("cp.marks")).expect("final marks"), status.code())
    };
    let mut git = Command::new("git");
    git.args(["fast-import", "--quiet"]);
    let mut ours = Command::new(CAT_BLOBD);
    ours.arg("--quiet");
    let git = snapshot("checkpoint-git", git);
    let ours = snapshot("checkpoint-ours", ours);
    let at_checkpoint = git.0.as_deref().expect("git wrote the marks at checkpoint");
    assert!(
        at_checkpoint.starts_with(b":1 ") && at_checkpoint.split(|&b| b == b'\n').count() == 3,
        "git: {}",
        escape(at_checkpoint)
    );
    assert_bytes_eq("marks at checkpoint", at_checkpoint, ours.0.as_deref().unwrap_or(b"<no file>"));
    assert_bytes_eq("marks at the end", &git.1, &ours.1);
    assert_eq!((git.2, ours.2), (Some(0), Some(0)));
}

// ---------------------------------------------------------------------------------------------------------------
// 7. `progress`, `checkpoint`, `done`, `feature done`

cases! {
    progress_echoes_the_line: b"progress hello, world\ncat-blob {blob2}\nprogress second\n" => 0, "";
    progress_with_nul_cr_and_escapes: b"progress a\0b\rc\x1b[0m\xff\\n\n" => 0, "";
    progress_empty_text: b"progress \n" => 0, "";
    progress_without_space: b"progress\n" => 128, "fatal: unsupported command: progress";
    progress_optional_lf: b"progress a\n\ncat-blob {blob2}\n" => 0, "";
    progress_two_blank_lines: b"progress a\n\n\ncat-blob {blob2}\n" => 128, "fatal: unsupported command: ";
    progress_at_eof_without_lf: b"cat-blob {blob2}\nprogress last" => 0, "";
    progress_looks_like_a_command: b"progress cat-blob {blob}\nprogress done\n" => 0, "";
    checkpoint_prints_nothing: b"blob\nmark :1\ndata 0\ncheckpoint\ncat-blob :1\ncheckpoint\n\nget-mark :1\n" => 0, "";
    checkpoint_two_blank_lines: b"checkpoint\n\n\n" => 128, "fatal: unsupported command: ";
    checkpoint_trailing_space: b"checkpoint \n" => 128, "fatal: unsupported command: checkpoint ";
    checkpoint_then_read_stream_blob_by_id: b"blob\ndata 5\nhello\ncheckpoint\ncat-blob {id:hello}\n" => 0, "";
    done_stops_reading: b"cat-blob {blob2}\ndone\ncat-blob {blob}\nthis is garbage\n\0\xff\n\n" => 0, "";
    done_without_lf: b"cat-blob {blob2}\ndone" => 0, "";
    done_trailing_space: b"done \n" => 128, "fatal: unsupported command: done ";
    done_capitalised: b"Done\n" => 128, "fatal: unsupported command: Done";
    done_in_data_is_data: b"blob\nmark :1\ndata 5\ndone\ncat-blob :1\n" => 0, "";
    feature_done_without_done_after_responses: b"feature done\ncat-blob {blob2}\nprogress p\ncat-blob {blob}\n" => 128, "fatal: stream ends early";
    feature_done_done_without_lf: b"feature done\ncat-blob {blob2}\ndone" => 128, "fatal: stream ends early";
    feature_done_done_with_trailing_garbage: b"feature done\ncat-blob {blob2}\ndone\ngarbage without LF" => 0, "";
    feature_done_done_with_nul: b"feature done\ncat-blob {blob2}\ndone\0x\n" => 0, "";
    feature_done_done_inside_delimited_data: b"feature done\nblob\ndata <<EOF\ndone\n" => 128, "fatal: EOF in data (terminator 'EOF' not found)";
    feature_done_done_as_data_then_eof: b"feature done\nblob\nmark :1\ndata 5\ndone\ncat-blob :1\n" => 128, "fatal: stream ends early";
    feature_done_only: b"feature done\n" => 128, "fatal: stream ends early";
    feature_done_twice: b"feature done\nfeature done\ndone\n" => 0, "";
}

#[test]
fn progress_and_responses_on_stdout_stay_in_order() {
    let stream = "progress 1\ncat-blob {blob2}\nprogress 2\nblob\nmark :1\ndata 3\nabc\nget-mark :1\nprogress 3\nls {tree} src\nprogress 4\n";
    case("progress and responses on stdout", stream).responses_on_stdout().expect(0, "");
}

#[test]
fn progress_long_line() {
    let mut stream = b"progress ".to_vec();
    stream.extend((0..200_000u32).map(|i| b'a' + (i % 26) as u8));
    stream.extend_from_slice(b"\ncat-blob ");
    stream.extend_from_slice(expand(b"{blob2}").as_slice());
    stream.push(b'\n');
    case("long progress line", "").raw_stream(stream).expect(0, "");
}

// ---------------------------------------------------------------------------------------------------------------
// 7. Commands that write history: git's "unsupported" forms compared with git, the refusals checked alone

cases! {
    commit_without_space_is_unsupported: b"cat-blob {blob2}\ncommit\n" => 128, "fatal: unsupported command: commit";
    tag_without_space_is_unsupported: b"tag\n" => 128, "fatal: unsupported command: tag";
    reset_without_space_is_unsupported: b"reset\n" => 128, "fatal: unsupported command: reset";
    alias_with_argument_is_unsupported: b"alias x\n" => 128, "fatal: unsupported command: alias x";
    from_at_top_level_is_unsupported: b"from {commit}\n" => 128, "fatal: unsupported command: from {commit}";
    filemodify_at_top_level_is_unsupported: b"M 100644 :1 x\n" => 128, "fatal: unsupported command: M 100644 :1 x";
}

/// With `--read-only`, cat-blobd refuses `commit`, `tag`, `reset` and `alias` (git would write history): exit 128
/// with one `fatal:` line naming the command, after every earlier response, and the marks are still exported.
#[test]
fn commands_that_write_history_are_refused() {
    let before = expand(b"blob\nmark :1\ndata 3\nabc\ncat-blob :1\nprogress before\nget-mark :1\n");
    let git = case("prefix", "").raw_stream(before.clone()).expect(0, "");
    for (command, lines) in [
        ("commit", "commit refs/heads/main\ncommitter C <c@example.com> 1700000000 +0000\ndata 0\n\n"),
        ("tag", "tag v9\nfrom :1\ndata 0\n"),
        ("reset", "reset refs/heads/main\nfrom {commit}\n\n"),
        ("alias", "alias\nmark :2\nto {commit}\n\n"),
    ] {
        let (_dir, repo) = throwaway(&Source::Fixture(Fixture::Basic), "refused");
        let mut stream = before.clone();
        stream.extend_from_slice(&expand(lines.as_bytes()));
        stream.extend_from_slice(b"cat-blob :1\nprogress after\n");
        let ours = Run::cat_blobd()
            .arg("--read-only")
            .capture_fd3()
            .arg("--export-marks=out.marks")
            .env("GIT_DIR", &repo)
            .current_dir(&repo)
            .stdin(stream)
            .run();
        assert_eq!(ours.status.code(), Some(128), "{command}: {}", ours.describe());
        assert_bytes_eq(&format!("{command}: cat-blob fd"), &git.fd3, &ours.fd3);
        assert_bytes_eq(&format!("{command}: stdout"), &git.stdout, &ours.stdout);
        let expected = format!("fatal: '{command}' is not supported: cat-blobd only answers read commands");
        assert!(
            ours.stderr.starts_with(expected.as_bytes())
                && ours.stderr.ends_with(b"\n")
                && ours.stderr.iter().filter(|&&b| b == b'\n').count() == 1,
            "{command}: stderr must be one line starting with {expected:?}: {}",
            escape(&ours.stderr)
        );
        let marks = fs::read(repo.join("out.marks")).expect("marks exported after the refusal");
        assert_bytes_eq(&format!("{command}: marks"), format!(":1 {}\n", sha1_blob_id(b"abc")).as_bytes(), &marks);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// 8. Repository details: replace refs, the empty tree, SHA-256, configuration

/// Replace refs in both throwaway repositories: a blob (loose ref after packing the others), a commit and a
/// tree (packed refs).
fn add_replace_refs(repo: &Path) {
    let ids = fixture_ids();
    git_in(repo, &["replace", &ids["commit"], &ids["old_commit"]], b"");
    git_in(repo, &["replace", &ids["tag_src"], &ids["tag_docs"]], b"");
    git_in(repo, &["pack-refs", "--all"], b"");
    git_in(repo, &["replace", &ids["blob"], &ids["blob2"]], b"");
}

#[test]
fn replace_refs_honoured_and_turned_off() {
    let stream = "cat-blob {blob}\ncat-blob {blob2}\nls {commit} README.md\nls {commit} \nls {tag} src\nls {tag} src/guide.txt\n\
                  ls {tag} src/main.c\nget-mark :1\ncat-blob :1\nls :2 README.md\n\
                  blob\nmark :3\ndata 13\nstream blob 3\ncat-blob :3\n";
    for no_replace in [false, true] {
        let mut c = case(&format!("replace refs, GIT_NO_REPLACE_OBJECTS={no_replace}"), stream)
            .file("in.marks", ":1 {blob}\n:2 {commit}\n")
            .prepare(add_replace_refs)
            .args(&["--import-marks=in.marks"]);
        if no_replace {
            c = c.env("GIT_NO_REPLACE_OBJECTS", "1");
        }
        let git = c.expect(0, "");
        let replaced = git.fd3.starts_with(expand(b"{blob} blob 10\n").as_slice());
        assert_eq!(replaced, !no_replace, "git honoured the replace refs: {replaced}");
    }
}

/// A blob written by the stream is read from fast-import's own pack, where replace refs do not apply.
#[test]
fn replace_refs_do_not_apply_to_stream_blobs() {
    let mut checks = Checks::default();
    let readme = git_in(&Fixture::Basic.git_dir(), &["cat-file", "blob", "HEAD:README.md"], b"");
    let mut stream = format!("cat-blob {}\nblob\nmark :1\ndata {}\n", expand_str("{blob}"), readme.len()).into_bytes();
    stream.extend_from_slice(&readme);
    stream.extend_from_slice(expand(b"cat-blob {blob}\ncat-blob :1\n").as_slice());
    for no_replace in [false, true] {
        let mut c = case(&format!("replaced id in stream, GIT_NO_REPLACE_OBJECTS={no_replace}"), "")
            .raw_stream(stream.clone())
            .prepare(add_replace_refs);
        if no_replace {
            c = c.env("GIT_NO_REPLACE_OBJECTS", "1");
        }
        c.check(&mut checks, 0, "");
    }
    checks.finish();
}

#[test]
fn replace_refs_and_marks_import() {
    // Imported marks name the original id; reading the object goes through the replace refs.
    case("marks import, replaced object", "get-mark :1\ncat-blob :1\n")
        .file("in.marks", ":1 {blob}\n")
        .prepare(add_replace_refs)
        .args(&["--import-marks=in.marks"])
        .expect(0, "");
}

#[test]
fn sha256_repository() {
    let repo = TagsRepo::new(true);
    let mut checks = Checks::default();
    let run = |checks: &mut Checks, what: &str, stream: &str, code: i32, message: &str| {
        let message = String::from_utf8(repo.expand(message)).expect("UTF-8");
        case(what, "").on(repo.source()).raw_stream(repo.expand(stream)).check(checks, code, &message);
    };
    run(
        &mut checks,
        "sha256 cat-blob",
        "cat-blob {t_blob}\ncat-blob {T_SCRIPT}\ncat-blob {t_missing}\ncat-blob {t_empty_blob}\n",
        0,
        "",
    );
    run(
        &mut checks,
        "sha256 stream blob",
        "blob\nmark :1\ndata 3\nabc\nget-mark :1\ncat-blob :1\ncat-blob {t_abc}\nblob\nmark :2\ndata 0\ncat-blob {t_empty_blob}\n",
        0,
        "",
    );
    run(
        &mut checks,
        "sha256 ls through nested tags",
        "ls {t_nested} \nls {t_nested} dir\nls {t_tag} link\nls {t_commit} sub\nls {t_tree} \"dir/t\\303\\251st\\tname\"\n\
         ls {t_nested} nosuch\nls {t_empty_tree} \nls {t_missing} x\n",
        128,
        "fatal: object not found: {t_missing}",
    );
    run(&mut checks, "sha256 tag to blob", "ls {t_blob_tag} x\n", 128, "fatal: not a tree-ish: ls {t_blob_tag} x");
    run(&mut checks, "sha256 cat-blob of a tag", "cat-blob {t_nested}\n", 128, "is a tag but a blob was expected");
    run(
        &mut checks,
        "sha256 40-hex id",
        "cat-blob {t_blob}\ncat-blob {blob}\n",
        128,
        "fatal: invalid dataref: cat-blob {blob}",
    );
    run(&mut checks, "sha256 40-hex ls", "ls {tree} x\n", 128, "fatal: invalid dataref: ls {tree} x");
    run(&mut checks, "sha256 65-hex id", "cat-blob {t_blob}0\n", 128, "fatal: garbage after SHA1: cat-blob {t_blob}0");

    let marks = String::from_utf8(repo.expand(":1 {t_blob}\n:2 {t_nested}\n:3 {t_tree}\n")).unwrap();
    case("sha256 marks import and export", "")
        .on(repo.source())
        .raw_stream(
            repo.expand("get-mark :1\nget-mark :2\ncat-blob :1\nls :2 dir\nls :3 run.sh\nblob\nmark :4\ndata 1\nx\n"),
        )
        .file("in.marks", marks)
        .args(&["--import-marks=in.marks", "--export-marks=out.marks"])
        .compare("out.marks")
        .check(&mut checks, 0, "");
    case("sha1 line in a sha256 marks file", "get-mark :1\n")
        .on(repo.source())
        .file("in.marks", ":1 {blob}\n")
        .args(&["--import-marks=in.marks"])
        .check(&mut checks, 128, "fatal: object not found: {blob}");
    checks.finish();
}

#[test]
fn config_quote_path_and_ignore_case() {
    let mut checks = Checks::default();
    let stream = "ls {tree} \"odd names/\\303\\274n\\303\\257c\\303\\270d\\303\\251.txt\"\nls {tree} \"odd names/tab\\there.txt\"\n\
                  ls {tree} readme.MD\nls {tree} SRC/MAIN.C\n";
    case("default config", stream).check(&mut checks, 0, "");
    case("GIT_CONFIG_COUNT", stream)
        .env("GIT_CONFIG_COUNT", "2")
        .env("GIT_CONFIG_KEY_0", "core.quotePath")
        .env("GIT_CONFIG_VALUE_0", "false")
        .env("GIT_CONFIG_KEY_1", "core.ignoreCase")
        .env("GIT_CONFIG_VALUE_1", "true")
        .check(&mut checks, 0, "");
    case("repository config", stream)
        .prepare(|repo| {
            git_in(repo, &["config", "core.quotepath", "off"], b"");
            git_in(repo, &["config", "core.ignorecase", "yes"], b"");
        })
        .check(&mut checks, 0, "");
    case("global config", stream)
        .file("global.config", "[core]\n\tquotePath = 0\n\tignoreCase\n")
        .env("GIT_CONFIG_GLOBAL", "{repo}/global.config")
        .check(&mut checks, 0, "");
    case("system config", stream)
        .file("system.config", "[core]\n\tquotePath = false\n")
        .env("GIT_CONFIG_NOSYSTEM", "0")
        .env("GIT_CONFIG_SYSTEM", "{repo}/system.config")
        .check(&mut checks, 0, "");
    case("environment over repository config", stream)
        .prepare(|repo| {
            git_in(repo, &["config", "core.quotepath", "false"], b"");
        })
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "core.quotepath")
        .env("GIT_CONFIG_VALUE_0", "true")
        .check(&mut checks, 0, "");
    checks.finish();
}
