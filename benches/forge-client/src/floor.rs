//! The floor: a server with the connect protocol of `cat-blobd serve` that answers every request from answers held
//! in memory, on the thread that accepted the connection (no hand-off, no repository, no lookup but a hash map).
//! What it costs a client is what the client, the pipes, the socket and the machine's scheduling cost: the least
//! any server could give this harness on this machine.

use crate::connect::{FDS, MAGIC};
use anyhow::{Context, Result, bail, ensure};
use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, IoSliceMut, Write};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::Arc;

/// Threads blocked in `accept` at once: more than the clients' connections in flight (8 by default), so a
/// connection never waits for a thread.
const ACCEPTORS: usize = 16;

/// The `git cat-file --batch` output the answers are cut from, and by id where each object's answer is in it:
/// (start, end of its header line, end); the header is its `info` and `--batch-check` answer.
struct Answers {
    text: Vec<u8>,
    by_id: HashMap<Vec<u8>, (usize, usize, usize)>,
}

pub fn serve(socket: &Path, answers: &Path) -> Result<()> {
    let answers = Arc::new(load(answers)?);
    let _ = std::fs::remove_file(socket);
    let listener = Arc::new(UnixListener::bind(socket)?);
    let threads: Vec<_> = (0..ACCEPTORS)
        .map(|_| {
            let (listener, answers) = (Arc::clone(&listener), Arc::clone(&answers));
            std::thread::spawn(move || {
                loop {
                    match listener.accept() {
                        Ok((conn, _)) => {
                            if let Err(e) = session(conn, &answers) {
                                eprintln!("floor: {e:#}");
                            }
                        }
                        Err(e) => eprintln!("floor: accept: {e}"),
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
    Ok(())
}

/// `git cat-file --batch` output: each object's header line, its bytes and a newline.
fn load(path: &Path) -> Result<Answers> {
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut by_id = HashMap::new();
    let mut at = 0;
    while at < text.len() {
        let eol = at + text[at..].iter().position(|&b| b == b'\n').context("a header without its newline")?;
        let fields: Vec<&[u8]> = text[at..eol].split(|&b| b == b' ').collect();
        ensure!(fields.len() == 3, "not an object's header: {:?}", String::from_utf8_lossy(&text[at..eol]));
        let size: usize = std::str::from_utf8(fields[2])?.parse()?;
        let end = eol + 1 + size + 1;
        ensure!(end <= text.len(), "{} ends inside an object", path.display());
        by_id.insert(fields[0].to_vec(), (at, eol + 1, end));
        at = end;
    }
    Ok(Answers { text, by_id })
}

/// One connection: the hello and its fds, the stream served, the fds closed, then `exit 0`.
fn session(mut conn: UnixStream, answers: &Answers) -> Result<()> {
    let mut buf = [0u8; 4096];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(&conn, &mut [IoSliceMut::new(&mut buf)], &mut control, RecvFlags::CMSG_CLOEXEC)?;
    let mut fds: Vec<OwnedFd> = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(passed) = message {
            fds.extend(passed);
        }
    }
    let (kinds, check) = parse_hello(&buf[..got.bytes])?;
    ensure!(kinds.len() == fds.len(), "{} fds announced, {} passed", kinds.len(), fds.len());
    let (mut input, mut output) = (None, None);
    // The rest (stderr, the directory) close here: the floor needs neither.
    for (kind, fd) in kinds.into_iter().zip(fds) {
        match kind {
            0 => input = Some(File::from(fd)),
            1 => output = Some(File::from(fd)),
            _ => {}
        }
    }
    let (input, output) = (input.context("no stdin passed")?, output.context("no stdout passed")?);
    stream(input, output, check, answers)?;
    conn.write_all(b"exit 0\n")?;
    Ok(())
}

/// What each passed fd is, and whether the stream is `--batch-check`. The client sends the hello in one
/// `sendmsg` of under 100 bytes, so one `recvmsg` holds it.
fn parse_hello(hello: &[u8]) -> Result<(Vec<i32>, bool)> {
    let rest = hello.strip_prefix(MAGIC).context("not a connect hello")?;
    let (&n, mut rest) = rest.split_first().context("a short hello")?;
    let mut take = |len: usize| -> Result<&[u8]> {
        ensure!(rest.len() >= len, "a short hello");
        let (head, tail) = rest.split_at(len);
        rest = tail;
        Ok(head)
    };
    let mut kinds = Vec::new();
    for _ in 0..n {
        kinds.push(i32::from_le_bytes(take(4)?.try_into()?));
    }
    let _umask = take(4)?;
    let argc = u32::from_le_bytes(take(4)?.try_into()?);
    let mut check = false;
    for _ in 0..argc {
        let len = u32::from_le_bytes(take(4)?.try_into()?) as usize;
        check |= take(len)? == b"--batch-check";
    }
    Ok((kinds, check))
}

/// `--batch-command --buffer`: answers gathered until `flush`; `--batch-check`: each answered at once.
fn stream(input: File, mut output: File, check: bool, answers: &Answers) -> Result<()> {
    let mut input = BufReader::new(input);
    let (mut line, mut out) = (Vec::new(), Vec::new());
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let request = line.strip_suffix(b"\n").unwrap_or(&line);
        if check {
            answer(answers, request, true, &mut out);
        } else if let Some(id) = request.strip_prefix(b"contents ") {
            answer(answers, id, false, &mut out);
        } else if let Some(id) = request.strip_prefix(b"info ") {
            answer(answers, id, true, &mut out);
        } else if request != b"flush" {
            bail!("the floor knows contents, info and flush, not {:?}", String::from_utf8_lossy(request));
        }
        if check || request == b"flush" {
            output.write_all(&out)?;
            out.clear();
        }
    }
    output.write_all(&out)?;
    Ok(())
}

fn answer(answers: &Answers, id: &[u8], header_only: bool, out: &mut Vec<u8>) {
    match answers.by_id.get(id) {
        Some(&(start, header, end)) => {
            out.extend_from_slice(&answers.text[start..if header_only { header } else { end }])
        }
        None => {
            out.extend_from_slice(id);
            out.extend_from_slice(b" missing\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The floor reads back what the client writes: the fds' kinds in order, and the mode from the arguments.
    #[test]
    fn hello_round_trip() {
        for check in [false, true] {
            let (kinds, got) = parse_hello(&crate::connect::hello(check)).unwrap();
            assert_eq!(kinds, [0, 1, 2, -1]);
            assert_eq!(got, check);
        }
    }

    #[test]
    fn answers_cut_from_batch_output() {
        let dir = std::env::temp_dir().join(format!("forge-client-test-{}", std::process::id()));
        std::fs::write(&dir, b"aa blob 3\nabc\nbb tree 0\n\n").unwrap();
        let answers = load(&dir).unwrap();
        std::fs::remove_file(&dir).unwrap();
        let mut out = Vec::new();
        answer(&answers, b"aa", false, &mut out);
        answer(&answers, b"bb", true, &mut out);
        answer(&answers, b"cc", true, &mut out);
        assert_eq!(out, b"aa blob 3\nabc\nbb tree 0\ncc missing\n");
    }
}
