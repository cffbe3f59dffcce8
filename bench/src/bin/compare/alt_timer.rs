//! tokio's alternative timer (`runtime::Builder::enable_alt_timer`) as a
//! fourth system on the multi-thread workloads, the only runtime it applies
//! to. tokio offers it only when compiled with `--cfg tokio_unstable`, a flag
//! that changes the build of every crate, so the parent builds this binary a
//! second time with it, in a target directory of its own (`alt-timer` in the
//! target directory, so the main build's artifacts stay as they are), and
//! runs those children with `--alt-timer`. If that build fails, the report
//! says why and the run goes on without the column.
//!
//! On W1's 2-worker runtime and W12's busy runtimes, tickwheel runs there
//! too ([`applies_to_tickwheel`]): the same child as tickwheel's default
//! one, on a runtime built with `enable_alt_timer`, so its driver's alarm
//! (a `tokio::time::Sleep`) is on the alternative timer. Its figures stand
//! beside tokio's on that timer, to show whether tickwheel's lead holds
//! there.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::systems::Work;

/// The workloads run on a multi-thread runtime, where the alternative timer
/// applies: tokio's figures on it.
pub fn applies(work: Work) -> bool {
    matches!(
        work,
        Work::W1Mt | Work::W5 | Work::W6 | Work::W7 | Work::W12(_) | Work::W13
    )
}

/// The workloads where tickwheel runs on a runtime with the alternative
/// timer as well, beside tokio on it: W1 on 2 workers and W12. (W1's
/// current-thread half has no alternative timer: tokio offers it on the
/// multi-thread runtime only.)
pub fn applies_to_tickwheel(work: Work) -> bool {
    matches!(work, Work::W1Mt | Work::W12(_))
}

/// The second build, or why there is none.
pub enum AltTimer {
    Ready { exe: PathBuf, status: String },
    Unavailable(String),
}

impl AltTimer {
    /// The binary whose children measure the alternative timer.
    pub fn exe(&self) -> Option<&Path> {
        match self {
            AltTimer::Ready { exe, .. } => Some(exe),
            AltTimer::Unavailable(_) => None,
        }
    }

    /// One line for the report: where the column comes from, or why it is
    /// empty.
    pub fn status(&self) -> &str {
        match self {
            AltTimer::Ready { status, .. } | AltTimer::Unavailable(status) => status,
        }
    }
}

/// `cargo build --release -p tickwheel-bench --bin compare` with
/// `--cfg tokio_unstable` added to `RUSTFLAGS`, into `target_dir/alt-timer`.
/// Up to date, it takes a second; from scratch, as long as the main build.
pub fn build(workspace: &Path, target_dir: &Path) -> AltTimer {
    let dir = target_dir.join("alt-timer");
    // The cargo that runs this binary (set by `cargo run`), else the one on
    // the PATH.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let rustflags = match std::env::var("RUSTFLAGS") {
        Ok(flags) if !flags.trim().is_empty() => format!("{flags} --cfg tokio_unstable"),
        _ => "--cfg tokio_unstable".to_string(),
    };
    let started = Instant::now();
    let output = Command::new(cargo)
        .current_dir(workspace)
        .args([
            "build",
            "--release",
            "-p",
            "tickwheel-bench",
            "--bin",
            "compare",
        ])
        .env("RUSTFLAGS", &rustflags)
        // It would take precedence over RUSTFLAGS.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env("CARGO_TARGET_DIR", &dir)
        .output();
    let output = match output {
        Ok(output) => output,
        Err(e) => return AltTimer::Unavailable(format!("not measured: cannot run cargo ({e})")),
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let error = stderr
            .lines()
            .find(|line| line.starts_with("error"))
            .or_else(|| stderr.lines().last())
            .unwrap_or("no output");
        return AltTimer::Unavailable(format!(
            "not measured: the build with RUSTFLAGS=\"{rustflags}\" failed ({}): {error}",
            output.status
        ));
    }
    let exe = dir
        .join("release")
        .join(format!("compare{}", std::env::consts::EXE_SUFFIX));
    AltTimer::Ready {
        status: format!(
            "tokio's alternative timer (enable_alt_timer): children of a build with \
             RUSTFLAGS=\"{rustflags}\" in {} ({:.0} s to build or check)",
            dir.strip_prefix(workspace).unwrap_or(&dir).display(),
            started.elapsed().as_secs_f64()
        ),
        exe,
    }
}
