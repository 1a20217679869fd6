//! What the sandbox costs a command: the median wall time of `true` run through the command
//! runner unconfined and in bubblewrap (200 runs each, alternating), then of a small crate's
//! `cargo test` (warm, 5 runs each). The aim is under 20 ms added per command.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use autofix::exec::{self, CommandSpec, Limits, Sandbox, SandboxMode};

const TRUE_RUNS: usize = 200;
const CARGO_RUNS: usize = 5;

fn main() {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let crate_dir = scratch.path().join("calc");
    small_crate(&crate_dir);
    let confined = Sandbox::new(SandboxMode::Bwrap, "bwrap", &[], &[], Limits::default());
    let unconfined = Sandbox::new(SandboxMode::None, "bwrap", &[], &[], Limits::default());

    let r#true = |sandbox: &Sandbox| {
        CommandSpec::new("true", Vec::<String>::new(), scratch.path())
            .confined(sandbox.jail(scratch.path()))
    };
    let (plain, boxed) = alternate(TRUE_RUNS, || r#true(&unconfined), || r#true(&confined));
    report("true", &plain, &boxed);

    let cargo = |sandbox: &Sandbox| {
        CommandSpec::new("cargo", ["test", "--quiet", "--offline"], &crate_dir)
            .with_timeout(Duration::from_secs(300))
            .confined(sandbox.jail(&crate_dir))
    };
    // One run of each first, so both measure a warm build.
    run(&cargo(&unconfined));
    run(&cargo(&confined));
    let (plain, boxed) = alternate(CARGO_RUNS, || cargo(&unconfined), || cargo(&confined));
    report("cargo test (small crate)", &plain, &boxed);
}

/// Runs the two commands one after the other `runs` times, so a slow moment hits both alike.
fn alternate(
    runs: usize,
    plain: impl Fn() -> CommandSpec,
    boxed: impl Fn() -> CommandSpec,
) -> (Vec<Duration>, Vec<Duration>) {
    let mut plain_times = Vec::with_capacity(runs);
    let mut boxed_times = Vec::with_capacity(runs);
    for _ in 0..runs {
        plain_times.push(run(&plain()));
        boxed_times.push(run(&boxed()));
    }
    (plain_times, boxed_times)
}

fn run(spec: &CommandSpec) -> Duration {
    let started = Instant::now();
    let outcome = exec::run(spec).expect("the command starts");
    assert!(
        outcome.success(),
        "{}: {}",
        outcome.describe(),
        outcome.output
    );
    started.elapsed()
}

fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn report(what: &str, plain: &[Duration], boxed: &[Duration]) {
    let (plain, boxed) = (median(plain), median(boxed));
    let added = boxed.saturating_sub(plain);
    println!(
        "{what:<26} unconfined {:>8.2} ms   sandboxed {:>8.2} ms   added {:>6.2} ms   ratio {:.2}   (aim: < 20 ms added: {})",
        ms(plain),
        ms(boxed),
        ms(added),
        boxed.as_secs_f64() / plain.as_secs_f64(),
        if added < Duration::from_millis(20) {
            "met"
        } else {
            "NOT met"
        }
    );
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn small_crate(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 3), 5);\n    }\n}\n",
    )
    .unwrap();
    let status = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success());
}
