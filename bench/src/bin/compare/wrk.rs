//! `wrk`, the load generator that drives W10: whether it is installed, its
//! command line, and what it prints (`--latency`), parsed.
//!
//! wrk is the Debian package's (`bench/scripts/install-wrk.sh`); nothing
//! here reimplements it. Its report looks like this (the figures vary):
//!
//! ```text
//! Running 10s test @ http://127.0.0.1:40123/
//!   2 threads and 32 connections
//!   Thread Stats   Avg      Stdev     Max   +/- Stdev
//!     Latency     1.63ms  676.74us  10.38ms   73.45%
//!     Req/Sec     9.95k   604.25    11.24k    68.50%
//!   Latency Distribution
//!      50%    1.55ms
//!      75%    2.01ms
//!      90%    2.43ms
//!      99%    3.80ms
//!   198123 requests in 10.00s, 21.17MB read
//!   Socket errors: connect 0, read 0, write 0, timeout 3
//!   Non-2xx or 3xx responses: 1021
//! Requests/sec:  19808.61
//! Transfer/sec:      2.12MB
//! ```

use std::process::Command;
use std::time::Duration;

/// What W10 prints, and its goals say, where wrk is absent.
pub const SKIPPED: &str = "skipped: wrk not installed (bench/scripts/install-wrk.sh)";

/// Whether `wrk` runs here.
pub fn installed() -> bool {
    Command::new("wrk")
        .arg("--version")
        .output()
        .is_ok_and(|o| !o.stdout.is_empty() || !o.stderr.is_empty())
}

/// wrk's arguments: 2 threads, `connections` keep-alive connections for
/// `duration` (whole seconds, at least 1), with the latency distribution,
/// against `port` on the loopback address.
pub fn args(connections: usize, duration: Duration, port: u16) -> Vec<String> {
    vec![
        "-t2".to_string(),
        format!("-c{connections}"),
        format!("-d{}s", duration.as_secs().max(1)),
        "--latency".to_string(),
        format!("http://127.0.0.1:{port}/"),
    ]
}

/// The figures of one wrk run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Responses wrk read over the run.
    pub requests: u64,
    /// The run's duration as wrk measured it, in s.
    pub seconds: f64,
    /// wrk's `Requests/sec`.
    pub requests_per_s: f64,
    /// The latency distribution, in ms.
    pub p50_ms: f64,
    pub p75_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    /// Socket errors: connect, read, write, timeout (0 when wrk reports
    /// none, as it does when they are all 0).
    pub socket_errors: u64,
    pub socket_timeouts: u64,
    /// Responses whose status was neither 2xx nor 3xx.
    pub non_2xx: u64,
}

/// A duration as wrk prints it (`850.00us`, `1.55ms`, `2.00s`, `1.00m`,
/// `1.00h`), in ms.
fn time_ms(text: &str) -> Option<f64> {
    let text = text.trim();
    for (unit, ms) in [
        ("us", 1e-3),
        ("ms", 1.0),
        ("s", 1e3),
        ("m", 60e3),
        ("h", 3_600e3),
    ] {
        if let Some(number) = text.strip_suffix(unit) {
            if let Ok(v) = number.parse::<f64>() {
                return Some(v * ms);
            }
        }
    }
    None
}

/// The number after `label` in `line`, up to the next comma or space.
fn count_after(line: &str, label: &str) -> Option<u64> {
    let at = line.find(label)? + label.len();
    line[at..]
        .trim_start()
        .split([',', ' '])
        .next()?
        .parse()
        .ok()
}

/// Parses wrk's `--latency` report; an error names what is missing, so a
/// change in wrk's format fails loudly instead of reading as zeros.
pub fn parse(output: &str) -> Result<Report, String> {
    let mut report = Report::default();
    let (mut got_requests, mut got_rate) = (false, false);
    let mut percentiles = [None; 4];
    for line in output.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [p, value] if p.ends_with('%') => {
                let slot = match *p {
                    "50%" => 0,
                    "75%" => 1,
                    "90%" => 2,
                    "99%" => 3,
                    _ => continue,
                };
                percentiles[slot] = Some(
                    time_ms(value).ok_or_else(|| format!("wrk: bad latency {value:?} at {p}"))?,
                );
            }
            [n, "requests", "in", took, ..] => {
                report.requests = n
                    .parse()
                    .map_err(|_| format!("wrk: bad request count {n:?}"))?;
                report.seconds = time_ms(took.trim_end_matches(','))
                    .ok_or_else(|| format!("wrk: bad duration {took:?}"))?
                    / 1e3;
                got_requests = true;
            }
            ["Requests/sec:", rate] => {
                report.requests_per_s = rate
                    .parse()
                    .map_err(|_| format!("wrk: bad rate {rate:?}"))?;
                got_rate = true;
            }
            ["Socket", "errors:", ..] => {
                for label in ["connect", "read", "write"] {
                    report.socket_errors += count_after(line, label).unwrap_or(0);
                }
                report.socket_timeouts = count_after(line, "timeout").unwrap_or(0);
            }
            ["Non-2xx", "or", "3xx", "responses:", n] => {
                report.non_2xx = n
                    .parse()
                    .map_err(|_| format!("wrk: bad non-2xx count {n:?}"))?;
            }
            _ => {}
        }
    }
    if !got_requests || !got_rate {
        return Err("wrk: no request count or Requests/sec in its output".into());
    }
    match percentiles {
        [Some(p50), Some(p75), Some(p90), Some(p99)] => {
            (report.p50_ms, report.p75_ms, report.p90_ms, report.p99_ms) = (p50, p75, p90, p99);
        }
        _ => return Err("wrk: no latency distribution (was --latency given?)".into()),
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = "\
Running 10s test @ http://127.0.0.1:40123/
  2 threads and 1000 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    45.12ms   12.01ms   1.20s    91.02%
    Req/Sec    11.02k     1.10k   13.50k    70.00%
  Latency Distribution
     50%  850.00us
     75%    2.01ms
     90%    1.02s
     99%    1.50m
  219345 requests in 10.10s, 23.43MB read
  Socket errors: connect 0, read 12, write 3, timeout 41
  Non-2xx or 3xx responses: 2210
Requests/sec:  21717.33
Transfer/sec:      2.32MB
";

    #[test]
    fn every_figure_of_a_full_report() {
        let r = parse(FULL).unwrap();
        assert_eq!(r.requests, 219_345);
        assert!((r.seconds - 10.1).abs() < 1e-9, "{}", r.seconds);
        assert!((r.requests_per_s - 21_717.33).abs() < 1e-9);
        // Each unit: us, ms, s, m.
        assert!((r.p50_ms - 0.85).abs() < 1e-9, "{}", r.p50_ms);
        assert!((r.p75_ms - 2.01).abs() < 1e-9);
        assert!((r.p90_ms - 1_020.0).abs() < 1e-9);
        assert!((r.p99_ms - 90_000.0).abs() < 1e-9);
        assert_eq!((r.socket_errors, r.socket_timeouts), (15, 41));
        assert_eq!(r.non_2xx, 2210);
    }

    #[test]
    fn a_clean_run_has_no_error_lines() {
        // wrk leaves out the socket-error and non-2xx lines when both are 0.
        let clean: String = FULL
            .lines()
            .filter(|l| !l.contains("Socket errors") && !l.contains("Non-2xx"))
            .map(|l| format!("{l}\n"))
            .collect();
        let r = parse(&clean).unwrap();
        assert_eq!((r.socket_errors, r.socket_timeouts, r.non_2xx), (0, 0, 0));
        assert_eq!(r.requests, 219_345);
    }

    #[test]
    fn a_report_without_its_figures_is_an_error() {
        // Without --latency: no distribution.
        let no_latency: String = FULL
            .lines()
            .filter(|l| {
                !l.trim_start().starts_with(|c: char| c.is_ascii_digit())
                    || l.contains("requests in")
            })
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(parse(&no_latency)
            .unwrap_err()
            .contains("latency distribution"));
        // A failed run (connection refused) prints no totals.
        let refused = "unable to connect to 127.0.0.1:1 Connection refused\n";
        assert!(parse(refused).is_err());
        assert!(parse("").is_err());
        // A unit wrk does not print.
        let odd = FULL.replace("850.00us", "850.00ns");
        assert!(parse(&odd).unwrap_err().contains("bad latency"));
    }

    #[test]
    fn args_are_loopback_keep_alive_with_latency() {
        assert_eq!(
            args(1000, Duration::from_secs(10), 8080),
            [
                "-t2",
                "-c1000",
                "-d10s",
                "--latency",
                "http://127.0.0.1:8080/"
            ]
        );
        // Under a second rounds up to wrk's smallest duration.
        assert_eq!(args(32, Duration::from_millis(300), 1)[2], "-d1s");
    }
}
