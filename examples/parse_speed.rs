//! How fast the log reader parses launch lines: generates 1,000,000 launch
//! lines of four bindings in memory and reads them back. Run with
//! `cargo run --release --example parse_speed`.

use std::time::Instant;

use taintworld::log::{Event, LogReader};

fn main() {
    const LINES: u64 = 1_000_000;
    let mut log = Vec::new();
    for i in 0..LINES {
        let kernel = i % 64;
        let stream = i % 8;
        log.extend_from_slice(
            format!(
                concat!(
                    r#"{{"op":"launch","kernel":"k{}","stream":{},"bindings":["#,
                    r#"{{"stream":{},"memory":{},"range":[0,4096],"access":"read"}},"#,
                    r#"{{"stream":{},"memory":{},"range":[0,4096],"access":"read"}},"#,
                    r#"{{"stream":{},"memory":{},"range":[4096,8192],"access":"read_write"}},"#,
                    r#"{{"stream":{},"memory":{},"range":[0,65536],"access":"write"}}"#,
                    r#"],"outcome":"ok"}}"#,
                    "\n"
                ),
                kernel,
                stream,
                stream,
                i % 1000,
                stream,
                i % 997,
                stream,
                i % 991,
                stream,
                i % 983
            )
            .as_bytes(),
        );
    }
    let bytes = log.len();
    for _ in 0..3 {
        let start = Instant::now();
        let cpu_start = thread_cpu_seconds();
        let mut launches = 0u64;
        let mut bindings = 0usize;
        for line in LogReader::new(log.as_slice()) {
            match line.map(|l| l.event) {
                Ok(Ok(Event::Launch { bindings: b, .. })) => {
                    launches += 1;
                    bindings += b.len();
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(launches, LINES);
        println!(
            "{launches} launch lines ({bindings} bindings, {:.0} MB) in {secs:.3} s wall: {:.2} M lines/s, {:.0} MB/s",
            bytes as f64 / 1e6,
            launches as f64 / secs / 1e6,
            bytes as f64 / secs / 1e6
        );
        if let (Some(a), Some(b)) = (cpu_start, thread_cpu_seconds()) {
            let cpu = b - a;
            println!(
                "    on-CPU time {cpu:.3} s: {:.2} M lines/s per core busy",
                launches as f64 / cpu / 1e6
            );
        }
    }
}

/// The time this thread has spent on a CPU (Linux), so that a figure taken on
/// a busy machine still says what one core does.
fn thread_cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some(nanos / 1e9)
}
