//! The engine on its own, with fake jobs: order, failures, the window, and the hand-off between the front end's
//! thread and the resolver threads.
use std::io::Read;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::ThreadId;

use super::*;

/// What a fake job does when it runs.
enum Step {
    /// Answers `<n>\n`.
    Line,
    /// Fails with `n`.
    Fail,
    /// Waits for a message on the channel first, then answers.
    WaitThenLine(Mutex<mpsc::Receiver<()>>),
    /// Waits for this many messages, then fails.
    WaitThenFail(Mutex<mpsc::Receiver<()>>, usize),
    /// Sends on the channel, then fails.
    SignalThenFail(Mutex<mpsc::Sender<()>>),
    /// Answers, then sends on the channel (so another job may go on).
    LineThenSignal(Mutex<mpsc::Sender<()>>),
    /// Answers and records the thread it ran on.
    RecordThread(Arc<Mutex<Vec<(u64, ThreadId)>>>),
    /// Sleeps a millisecond, then as `RecordThread`.
    SleepThenRecordThread(Arc<Mutex<Vec<(u64, ThreadId)>>>),
}

struct Fake {
    n: u64,
    step: Step,
}

impl Fake {
    fn new(n: u64, step: Step) -> Fake {
        Fake { n, step }
    }

    fn line(n: u64) -> Fake {
        Fake::new(n, Step::Line)
    }
}

#[derive(Debug, PartialEq, Eq)]
struct Failed(u64);

impl Job for Fake {
    type Worker = ();
    type Error = Failed;

    fn run(self, _: &mut ()) -> Result<Response, Failed> {
        let answer = Response::Line(format!("{}\n", self.n).into_bytes());
        match self.step {
            Step::Line => Ok(answer),
            Step::Fail => Err(Failed(self.n)),
            Step::WaitThenLine(gate) => {
                let _ = gate.lock().unwrap().recv();
                Ok(answer)
            }
            Step::WaitThenFail(gate, messages) => {
                let gate = gate.lock().unwrap();
                for _ in 0..messages {
                    let _ = gate.recv();
                }
                Err(Failed(self.n))
            }
            Step::SignalThenFail(signal) => {
                let _ = signal.lock().unwrap().send(());
                Err(Failed(self.n))
            }
            Step::LineThenSignal(signal) => {
                let _ = signal.lock().unwrap().send(());
                Ok(answer)
            }
            Step::SleepThenRecordThread(seen) => {
                std::thread::sleep(std::time::Duration::from_millis(1));
                seen.lock().unwrap().push((self.n, std::thread::current().id()));
                Ok(answer)
            }
            Step::RecordThread(seen) => {
                seen.lock().unwrap().push((self.n, std::thread::current().id()));
                Ok(answer)
            }
        }
    }
}

type Outcome = (Result<(), EngineError<Failed>>, OutputStats);

/// Runs `feed` against an engine writing into a pipe; returns what the pipe received, the engine's outcome,
/// and whether the resolver threads were started.
fn run(config: EngineConfig, feed: impl FnOnce(&mut Engine<'_, Fake>)) -> (Vec<u8>, Outcome, bool) {
    let (read_end, write_end) = rustix::pipe::pipe().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        std::fs::File::from(read_end).read_to_end(&mut out).unwrap();
        out
    });
    let (outcome, started) = std::thread::scope(|scope| {
        let mut engine = Engine::new(scope, Output::new(write_end.as_fd()), config, || ());
        feed(&mut engine);
        let started = engine.threads_running();
        (engine.finish(), started)
    });
    drop(write_end);
    (reader.join().unwrap(), outcome, started)
}

fn lines(range: impl Iterator<Item = u64>) -> Vec<u8> {
    range.flat_map(|n| format!("{n}\n").into_bytes()).collect()
}

fn threaded(threads: usize) -> EngineConfig {
    EngineConfig { threads, ..EngineConfig::default() }
}

#[test]
fn a_short_stream_is_answered_without_threads() {
    let config = EngineConfig { inline_requests: 16, ..threaded(2) };
    let (out, (result, stats), started) = run(config, |engine| {
        for n in 0..16 {
            engine.job(Fake::line(n), &mut (), false).unwrap();
        }
    });
    assert_eq!((out, started), (lines(0..16), false));
    assert!(result.is_ok());
    assert_eq!(stats.writev_calls, 16);
}

#[test]
fn a_longer_stream_starts_the_threads_and_keeps_the_order() {
    for (requests, inline) in [(17, 16), (300, 0)] {
        let config = EngineConfig { inline_requests: inline, ..threaded(2) };
        let (out, (result, _), started) = run(config, |engine| {
            for n in 0..requests {
                engine.job(Fake::line(n), &mut (), false).unwrap();
            }
        });
        assert_eq!((out, started), (lines(0..requests), true));
        assert!(result.is_ok());
    }
}

#[test]
fn ready_responses_and_jobs_keep_request_order() {
    let (out, (result, stats), _) = run(threaded(3), |engine| {
        for n in 0..200 {
            if n % 3 == 0 {
                engine.ready(Response::Line(format!("{n}\n").into_bytes()), Target::Main).unwrap();
            } else {
                engine.job(Fake::line(n), &mut (), false).unwrap();
            }
        }
    });
    assert_eq!(out, lines(0..200));
    assert!(result.is_ok());
    assert_eq!(stats.bytes, out.len() as u64);
}

#[test]
fn the_first_failure_in_request_order_wins_and_nothing_after_it_is_written() {
    // Job 5 fails only after 6 has been answered and 7 has failed: 6 is ready before 5, and 7 failed first in
    // time, yet the output stops before 5 and the stream's error is 5's. Each job is handed off alone, so that
    // 5, 6 and 7 run on three threads at once.
    let (signal, five_waits) = mpsc::channel();
    let config = EngineConfig { jobs_per_hand_off: 1, ..threaded(4) };
    let (out, (result, _), _) = run(config, |engine| {
        for n in 0..5 {
            engine.job(Fake::line(n), &mut (), false).unwrap();
        }
        let five = Step::WaitThenFail(Mutex::new(five_waits), 2);
        engine.job(Fake::new(5, five), &mut (), false).unwrap();
        engine.job(Fake::new(6, Step::LineThenSignal(Mutex::new(signal.clone()))), &mut (), false).unwrap();
        engine.job(Fake::new(7, Step::SignalThenFail(Mutex::new(signal))), &mut (), false).unwrap();
        // Requests after the failures may or may not be accepted; none is written.
        for n in 8..20 {
            if engine.job(Fake::line(n), &mut (), false).is_err() {
                break;
            }
        }
    });
    assert_eq!(out, lines(0..5));
    assert!(matches!(result, Err(EngineError::Job(Failed(5)))), "{result:?}");
}

#[test]
fn a_job_that_fails_inline_is_returned_at_once() {
    let (out, (result, _), started) = run(threaded(2), |engine| {
        engine.job(Fake::line(0), &mut (), true).unwrap();
        let failure = engine.job(Fake::new(1, Step::Fail), &mut (), true).unwrap_err();
        assert!(matches!(failure, EngineError::Job(Failed(1))));
    });
    assert_eq!((out, started), (lines(0..1), false));
    assert!(result.is_ok(), "the front end reports an inline failure itself");
}

#[test]
fn a_full_window_holds_the_front_end_back_until_a_response_is_written() {
    let (release, gate) = mpsc::channel();
    let released = Arc::new(AtomicBool::new(false));
    let config = EngineConfig { window: 4, ..threaded(2) };
    let (out, (result, _), _) = run(config, |engine| {
        engine.job(Fake::new(0, Step::WaitThenLine(Mutex::new(gate))), &mut (), false).unwrap();
        for n in 1..4 {
            engine.job(Fake::line(n), &mut (), false).unwrap();
        }
        let opener = {
            let released = Arc::clone(&released);
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                released.store(true, Ordering::SeqCst);
                release.send(()).unwrap();
            })
        };
        // Four in flight: the fifth waits until job 0 is answered and written.
        engine.job(Fake::line(4), &mut (), false).unwrap();
        assert!(released.load(Ordering::SeqCst), "the fifth request went in while the window was full");
        opener.join().unwrap();
    });
    assert_eq!(out, lines(0..5));
    assert!(result.is_ok());
}

#[test]
fn interactive_requests_run_on_the_front_ends_thread_only_when_nothing_is_in_flight() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = |n| Fake::new(n, Step::RecordThread(Arc::clone(&seen)));
    let here = std::thread::current().id();
    let (out, (result, _), started) = run(threaded(2), |engine| {
        engine.job(record(0), &mut (), true).unwrap();
        for n in 1..50 {
            engine.job(record(n), &mut (), false).unwrap();
        }
        // Still in flight or not, an interactive request now goes through the queue or runs here; either way
        // order holds. After a drain nothing is in flight, so it runs here.
        engine.job(record(50), &mut (), true).unwrap();
        engine.drain().unwrap();
        engine.job(record(51), &mut (), true).unwrap();
    });
    assert_eq!(out, lines(0..52));
    assert!(result.is_ok() && started);
    let seen = seen.lock().unwrap();
    let thread_of = |n| seen.iter().find(|(m, _)| *m == n).map(|(_, thread)| *thread).unwrap();
    assert_eq!(thread_of(0), here);
    assert_eq!(thread_of(51), here);
    assert!((1..50).all(|n| thread_of(n) != here), "batch requests run on resolver threads");
}

/// Neighbouring requests often share a delta chain: they run on one thread, one after the other, so that the
/// second finds what the first left in its resolver. Each job takes a moment, so that a free thread would take
/// the next one if it could.
#[test]
fn consecutive_jobs_go_to_one_thread_together() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let config = EngineConfig { jobs_per_hand_off: 4, ..threaded(2) };
    let (out, (result, _), _) = run(config, |engine| {
        for n in 0..40 {
            let slow = Step::SleepThenRecordThread(Arc::clone(&seen));
            engine.job(Fake::new(n, slow), &mut (), false).unwrap();
        }
    });
    assert_eq!(out, lines(0..40));
    assert!(result.is_ok());
    let seen = seen.lock().unwrap();
    let thread_of = |n| seen.iter().find(|(m, _)| *m == n).map(|(_, thread)| *thread).unwrap();
    for group in (0..40).collect::<Vec<u64>>().chunks(4) {
        assert!(group.iter().all(|&n| thread_of(n) == thread_of(group[0])), "jobs {group:?} on one thread");
    }
    let threads: std::collections::HashSet<_> = seen.iter().map(|(_, thread)| *thread).collect();
    assert_eq!(threads.len(), 2, "both threads had work");
}

/// Jobs waiting to be handed off go out when the front end would otherwise wait for them: for room in the
/// window (here after 2 of a batch of 8), and at a drain.
#[test]
fn pending_jobs_are_handed_off_before_the_front_end_waits() {
    let config = EngineConfig { window: 2, jobs_per_hand_off: 8, ..threaded(2) };
    let (out, (result, _), _) = run(config, |engine| {
        for n in 0..5 {
            engine.job(Fake::line(n), &mut (), false).unwrap();
        }
        engine.drain().unwrap();
        engine.job(Fake::line(5), &mut (), false).unwrap();
        engine.ready(Response::Line(b"6\n".to_vec()), Target::Main).unwrap();
    });
    assert_eq!(out, lines(0..7));
    assert!(result.is_ok());
}

#[test]
fn stdout_lines_go_to_stdout_and_responses_to_the_main_fd() {
    let (main_read, main_write) = rustix::pipe::pipe().unwrap();
    let (stdout_read, stdout_write) = rustix::pipe::pipe().unwrap();
    let drain = |fd: rustix::fd::OwnedFd| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            std::fs::File::from(fd).read_to_end(&mut out).unwrap();
            out
        })
    };
    let (main_reader, stdout_reader) = (drain(main_read), drain(stdout_read));
    std::thread::scope(|scope| {
        let output = Output::split(main_write.as_fd(), stdout_write.as_fd());
        let mut engine = Engine::<Fake>::new(scope, output, threaded(2), || ());
        engine.job(Fake::line(0), &mut (), false).unwrap();
        engine.ready(Response::Line(b"progress\n".to_vec()), Target::Stdout).unwrap();
        engine.job(Fake::line(1), &mut (), false).unwrap();
        let (result, stats) = engine.finish();
        assert!(result.is_ok());
        assert_eq!(stats.bytes, 4, "only the main fd's bytes count");
    });
    drop((main_write, stdout_write));
    assert_eq!(main_reader.join().unwrap(), lines(0..2));
    assert_eq!(stdout_reader.join().unwrap(), b"progress\n");
}

#[test]
fn a_reader_that_went_away_ends_the_stream_with_a_broken_pipe() {
    let (read_end, write_end) = rustix::pipe::pipe().unwrap();
    drop(read_end);
    std::thread::scope(|scope| {
        let mut engine = Engine::<Fake>::new(scope, Output::new(write_end.as_fd()), threaded(2), || ());
        let mut refused = None;
        for n in 0..100 {
            if let Err(error) = engine.job(Fake::line(n), &mut (), false) {
                refused = Some(error);
                break;
            }
        }
        let (result, _) = engine.finish();
        let error = refused.or(result.err()).expect("writing to a closed pipe fails");
        assert!(matches!(&error, EngineError::Write(write) if write.is_broken_pipe()), "{error:?}");
    });
}

/// A resolver thread sends the results of a batch to the writer together: one wake-up per batch, not per
/// response. 64 jobs in batches of 8 on one thread reach the fd in at most 8 writes. Each job takes a
/// millisecond, so that a writer woken per response would write each one alone.
#[test]
fn a_batch_of_results_is_written_together() {
    let config = EngineConfig { jobs_per_hand_off: 8, ..threaded(1) };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (out, (result, stats), _) = run(config, |engine| {
        for n in 0..64 {
            let slow = Step::SleepThenRecordThread(Arc::clone(&seen));
            engine.job(Fake::new(n, slow), &mut (), false).unwrap();
        }
    });
    assert_eq!(out, lines(0..64));
    assert!(result.is_ok());
    assert!(stats.writev_calls <= 8, "{} writes for 8 batches", stats.writev_calls);
}

/// Results held back for their batch go out once they fill a write (`batch_bytes`): a later job of the batch
/// that cannot finish until the reader has the earlier responses (here it waits for the reader to see response
/// 0) does not hold them back.
#[test]
fn a_batch_holds_back_no_more_than_one_write() {
    let (read_end, write_end) = rustix::pipe::pipe().unwrap();
    let (seen_zero, wait_for_zero) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut input = std::io::BufReader::new(std::fs::File::from(read_end));
        let mut out = Vec::new();
        while std::io::BufRead::read_until(&mut input, b'\n', &mut out).unwrap() > 0 {
            if out == b"0\n" {
                seen_zero.send(()).unwrap();
            }
        }
        out
    });
    let config = EngineConfig { jobs_per_hand_off: 4, batch_bytes: 1, ..threaded(1) };
    let (result, _) = std::thread::scope(|scope| {
        let mut engine = Engine::new(scope, Output::new(write_end.as_fd()), config, || ());
        engine.job(Fake::line(0), &mut (), false).unwrap();
        engine.job(Fake::new(1, Step::WaitThenLine(Mutex::new(wait_for_zero))), &mut (), false).unwrap();
        engine.finish()
    });
    drop(write_end);
    assert!(result.is_ok());
    assert_eq!(reader.join().unwrap(), lines(0..2));
}
