//! The `cat-blobd` binary: parse flags, find the repository, run one stream from stdin, exit with git's status
//! (0, 1 when the marks file could not be written, 128 fatal, 129 usage). A first argument `serve`, `connect` or
//! `stats` selects daemon mode instead (see `cat_blobd::server`).
#![deny(unsafe_code)]
// No Rust `fn main`: see `main` below.
#![no_main]

use std::os::fd::AsFd;

use clap::error::ErrorKind;

use cat_blobd::fast_import::{self, StreamIo};
use cat_blobd::fatal::print_fatal;
use cat_blobd::settings::{self, Assembled, Environment, Use};
use cat_blobd::{cat_file, cli, heap, shim};

/// The C entry point, in place of the one std generates around `fn main`, to skip std's start-up work that
/// `cat-blobd` does not need and that costs a `connect` (a process per stream) about a fifth of its start-up
/// (see `benches/daemon.sh`): finding the main thread's stack guard, which glibc does by reading and parsing
/// `/proc/self/maps`, and installing the stack-overflow handlers with their alternate signal stacks, one per
/// thread the daemon starts. What std's wrapper did and cat-blobd relies on is done here or in [`run_main`]:
/// closed standard fds are opened on /dev/null, SIGPIPE (std ignored it; each mode sets it as it needs), a panic
/// exits 101, and `std::process::exit` flushes stdout. A stack overflow is then a plain SIGSEGV, without std's message. The arguments are std's too: on
/// glibc Linux it captures them before `main` (through `.init_array`), so `std::env::args_os` works unchanged.
#[allow(unsafe_code)]
// SAFETY: with `no_main`, std defines no `main` symbol, so this is the program's only one, with the signature
// libc's start-up code calls; it reads neither argument.
#[unsafe(no_mangle)]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    sanitize_standard_fds();
    let code = std::panic::catch_unwind(run_main).unwrap_or(101);
    std::process::exit(i32::from(code))
}

/// What std's start-up did, as git's `sanitize_stdfds` does: a standard fd that is not open is opened on
/// /dev/null, so that no file opened later takes its number (and gets the output meant for it).
#[allow(unsafe_code)]
fn sanitize_standard_fds() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd { fd, events: 0, revents: 0 });
    // SAFETY: `fds` is an array of 3 initialised pollfds that outlives the call; poll writes only their `revents`.
    if unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) } == -1 {
        return;
    }
    for _closed in fds.iter().filter(|fd| fd.revents & libc::POLLNVAL != 0) {
        // SAFETY: a NUL-terminated path and valid flags. The fds below this one are open (or were just opened in
        // this loop), so the lowest free number, which `open` returns, is this one. Kept open for the process's
        // life, inherited like the standard fd it stands for.
        let _ = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
    }
}

/// What `cat-blobd` does, as its exit status.
fn run_main() -> u8 {
    let mut argv = std::env::args_os();
    let argv0 = argv.next().unwrap_or_default();
    if shim::invoked_as_git(&argv0) {
        heap::for_one_stream();
        restore_sigpipe();
        return shim::main(&argv0, &argv.collect::<Vec<_>>());
    }
    let mut args = argv.peekable();
    let mode = cli::Mode::of(args.peek());
    // One stream per process: its resolver arenas get whole heaps once it proves long. Not the daemon (see `heap`).
    if matches!(mode, cli::Mode::Stream | cli::Mode::CatFile) {
        heap::for_one_stream();
    }
    match mode {
        cli::Mode::Stream => {}
        cli::Mode::CatFile => {
            restore_sigpipe();
            return cat_file_main(args.skip(1));
        }
        cli::Mode::Serve => return daemon::serve_main(args.skip(1)),
        cli::Mode::Connect => {
            restore_sigpipe();
            return daemon::connect_main(args.skip(1));
        }
        cli::Mode::Stats => {
            restore_sigpipe();
            return daemon::stats_main(args.skip(1));
        }
        cli::Mode::Shim => {
            restore_sigpipe();
            return shim_main(args.skip(1));
        }
    }
    sigpipe_takes_git_along();
    let args = match cli::parse(args) {
        Ok(args) => args,
        Err(err) => return usage_error(err),
    };
    match run(args) {
        Ok(code) => code,
        Err(err) => {
            print_fatal(&format!("{err:#}"));
            128
        }
    }
}

fn run(args: cli::Args) -> anyhow::Result<u8> {
    let Assembled { store, stream: mut config, .. } =
        settings::assemble(&args.cli, &Environment::from_process(), Use::OneShot)?;
    config.fast_import_args = args.fast_import;
    // Our own handle on fd 0, read unbuffered by std: the session's reader does the buffering.
    let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let cache = config.cache.clone();
    let outcome = fast_import::run(stdin, StreamIo::process(), &store, config);
    exit_without_freeing((store, cache));
    Ok(outcome.code())
}

/// `cat-blobd cat-file …`, with git cat-file's flags; cat-blobd's own settings keep their defaults.
fn cat_file_main(args: impl Iterator<Item = std::ffi::OsString>) -> u8 {
    let defaults = cli::parse(std::iter::empty()).expect("the defaults parse").cli;
    let opened = settings::assemble(&defaults, &Environment::from_process(), Use::OneShot)
        .map_err(anyhow::Error::from)
        .and_then(|assembled| Ok((assembled, std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?))));
    let (Assembled { repo, store, stream }, stdin) = match opened {
        Ok(opened) => opened,
        Err(err) => {
            print_fatal(&format!("{err:#}"));
            return 128;
        }
    };
    let index_file = std::env::var_os("GIT_INDEX_FILE").filter(|file| !file.is_empty()).map(std::path::PathBuf::from);
    let cat_file_repo = cat_file::Repo {
        index_file: index_file.as_deref(),
        ..cat_file::Repo::new(&repo, &store, stream.cache, stream.engine)
    };
    let code = cat_file::run(args, &cat_file_repo, cat_file::Io::process(), stdin).code;
    let cache = cat_file_repo.cache;
    exit_without_freeing((store, cache));
    code
}

/// Leaves the store and the delta-base cache to the exit, which unmaps the whole address space anyway, instead of
/// freeing them object by object on the way out: once the last response is written, the caller waits for nothing
/// else. The store only reads, so nothing is lost: its maps and caches have no state to save. git.git, pack order,
/// 20,000 blobs through a pipe: from the last byte read to the exit, 28.5 → 21.0 ms (medians of 5 alternating
/// runs; the rest is the kernel's teardown, which git pays too).
fn exit_without_freeing<T>(store_and_cache: T) {
    std::mem::forget(store_and_cache);
}

/// The daemon's three commands: `serve`, `connect` and `stats`.
mod daemon {
    use std::ffi::OsString;
    use std::io::Write;

    use clap::Parser;

    use super::usage_error;
    use cat_blobd::cli::{self, ServeCli, StatsCli};
    use cat_blobd::fatal::print_fatal;
    use cat_blobd::server::log::Value;
    use cat_blobd::server::{self, RootConfig, Server, ServerConfig, Serving, shutdown};
    use cat_blobd::settings::{self, Assembled, Environment, Use};
    use cat_blobd::wire::client;

    /// `cat-blobd serve`. SIGPIPE is ignored: a client that goes away ends its own stream with EPIPE, never the
    /// daemon. SIGTERM, SIGINT, SIGHUP and SIGQUIT are blocked before any thread
    /// exists and taken by the signal thread.
    pub fn serve_main(args: impl Iterator<Item = OsString>) -> u8 {
        super::ignore_sigpipe();
        if let Err(err) = shutdown::block_termination_signals() {
            print_fatal(&format!("cannot block the termination signals: {err}"));
            return 128;
        }
        let args = match ServeCli::try_parse_from(std::iter::once(OsString::from("cat-blobd serve")).chain(args)) {
            Ok(args) => args,
            Err(err) => return usage_error(err),
        };
        match serve(args) {
            Ok(()) => 0,
            Err(err) => {
                print_fatal(&format!("{err:#}"));
                128
            }
        }
    }

    fn serve(args: ServeCli) -> anyhow::Result<()> {
        let serving = match &args.root {
            Some(dir) => Serving::Root(RootConfig {
                dir: dir.clone(),
                cli: args.stream.clone(),
                allow_writes: args.allow_writes,
                memory_budget: args.memory_budget,
                max_open_repositories: args.max_open_repositories,
            }),
            None => {
                let Assembled { repo, store, stream: mut session } =
                    settings::assemble(&args.stream, &Environment::from_process(), Use::Daemon)?;
                if !args.allow_writes {
                    session.write_through = None;
                }
                Serving::One { repo, store, session }
            }
        };
        let config = ServerConfig {
            socket: args.socket,
            socket_mode: args.socket_mode,
            max_connections: args.max_connections,
            refuse_when_full: args.refuse_when_full,
            allow_uids: args.allow_uid,
            grace: args.grace,
            hello_timeout: args.hello_timeout,
            max_marks: args.max_marks,
            max_marks_total: args.max_marks_total,
            max_stream_blobs_total: args.max_stream_blobs_total,
            max_spill_bytes_total: args.max_spill_bytes_total,
            log_format: args.log_format,
            serving,
            metrics: args.metrics,
        };
        server::raise_fd_limit();
        let server = Server::bind(config)?;
        let log = server.logger();
        shutdown::spawn_signal_thread(server.shutdown_handle(), move |signal| {
            log.log("signal", &[("signal", Value::Str(signal))]);
        })?;
        server.run()?;
        Ok(())
    }

    /// `cat-blobd connect`: exits as the stream did, or dies by SIGPIPE as `cat-blobd` would have.
    pub fn connect_main(args: impl Iterator<Item = OsString>) -> u8 {
        let args = match cli::parse_connect(args) {
            Ok(args) => args,
            Err(err) => return usage_error(err),
        };
        match client::connect(&args.cli.socket, args.cli.server_uid, args.stream) {
            // SIGPIPE's default action was restored at start: a stream that died of it ends this process too.
            Ok(reply) => client::exit_status(reply),
            Err(err) => {
                print_fatal(&err.to_string());
                128
            }
        }
    }

    /// `cat-blobd stats`.
    pub fn stats_main(args: impl Iterator<Item = OsString>) -> u8 {
        let args = match StatsCli::try_parse_from(std::iter::once(OsString::from("cat-blobd stats")).chain(args)) {
            Ok(args) => args,
            Err(err) => return usage_error(err),
        };
        match client::stats(&args.socket) {
            Ok(text) => {
                let _ = std::io::stdout().write_all(&text);
                0
            }
            Err(err) => {
                print_fatal(&err.to_string());
                128
            }
        }
    }
}

/// `cat-blobd shim <dir>`: the link, and the `PATH` line on stdout.
fn shim_main(args: impl Iterator<Item = std::ffi::OsString>) -> u8 {
    use clap::Parser;
    let args = match cli::ShimCli::try_parse_from(std::iter::once("cat-blobd shim".into()).chain(args)) {
        Ok(args) => args,
        Err(err) => return usage_error(err),
    };
    match shim::link::install(&args.dir) {
        Ok(line) => {
            let _ = std::io::Write::write_all(&mut std::io::stdout(), &line);
            0
        }
        Err(err) => {
            print_fatal(&err.to_string());
            128
        }
    }
}

/// Errors in cat-blobd's own flags: `--help` and `--version` print and succeed; anything else is usage (129).
fn usage_error(err: clap::Error) -> u8 {
    let _ = err.print();
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => 0,
        _ => 129,
    }
}

/// [`restore_sigpipe`], but a write-through stream's git child dies of the same SIGPIPE first, as git alone
/// would have died of it: it must not take the end of its input for the end of the stream and update refs.
#[allow(unsafe_code)]
fn sigpipe_takes_git_along() {
    extern "C" fn on_sigpipe(_: libc::c_int) {
        let pid = cat_blobd::fast_import::running_git_pid();
        // SAFETY: `kill`, `signal` and `raise` are async-signal-safe. SIGPIPE is blocked while this handler
        // runs, so the raised one is delivered, with the default action (death), when it returns.
        unsafe {
            if pid > 0 {
                libc::kill(pid, libc::SIGPIPE);
            }
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::raise(libc::SIGPIPE);
        }
    }
    restore_sigpipe();
    // SAFETY: called first thing in main, before any thread exists; the handler only makes the calls above.
    unsafe {
        libc::signal(libc::SIGPIPE, on_sigpipe as *const () as libc::sighandler_t);
    }
}

/// SIGPIPE ignored: writes to a closed pipe or socket fail with EPIPE instead.
#[allow(unsafe_code)]
fn ignore_sigpipe() {
    // SAFETY: called first thing in main, before any thread exists; `signal` only changes this process's
    // disposition of SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Like git (`restore_sigpipe_to_default`), die quietly by SIGPIPE when the frontend stops reading, even if
/// our parent ignored or blocked the signal.
#[allow(unsafe_code)]
fn restore_sigpipe() {
    let set = cat_blobd::git_compat::sigset::sigset(&[libc::SIGPIPE]);
    // SAFETY: called first thing in main, before any thread exists; `signal` and `sigprocmask` only change
    // this process's signal disposition and mask, and `set` is initialised.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }
}
