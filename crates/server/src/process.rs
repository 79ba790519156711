//! The standard `process_*` metrics (resident memory, open file
//! descriptors, CPU time, start time), read from Linux's `/proc/self`.
//! Elsewhere, and for any figure `/proc` does not give, nothing is
//! rendered: a missing sample is better than a wrong one.

use std::fmt::Write as _;

/// Appends the process families to a text exposition.
pub(crate) fn render(out: &mut String) {
    let Some(figures) = Figures::read() else {
        return;
    };
    let mut family = |name: &str, kind: &str, help: &str, value: Option<f64>| {
        if let Some(value) = value {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        }
    };
    family(
        "process_cpu_seconds_total",
        "counter",
        "User and system CPU time spent in seconds.",
        figures.cpu_seconds,
    );
    family(
        "process_resident_memory_bytes",
        "gauge",
        "Resident memory size in bytes.",
        figures.resident_bytes,
    );
    family(
        "process_virtual_memory_bytes",
        "gauge",
        "Virtual memory size in bytes.",
        figures.virtual_bytes,
    );
    family(
        "process_open_fds",
        "gauge",
        "Number of open file descriptors.",
        figures.open_fds,
    );
    family(
        "process_max_fds",
        "gauge",
        "Maximum number of open file descriptors.",
        figures.max_fds,
    );
    family(
        "process_start_time_seconds",
        "gauge",
        "Start time of the process since unix epoch in seconds.",
        figures.start_time_seconds,
    );
}

/// The soft limit of open file descriptors (`RLIMIT_NOFILE`), where the
/// platform says (Linux: `/proc/self/limits`); `None` for "unlimited".
pub(crate) fn descriptor_limit() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let text = std::fs::read_to_string("/proc/self/limits").ok()?;
        parse_max_fds(&text).map(|limit| limit as u64)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The file descriptors open now, where the platform says (Linux:
/// `/proc/self/fd`, less the one its listing opens); `None` when it
/// cannot be read (no descriptor left to list it, say).
pub(crate) fn open_descriptors() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let entries = std::fs::read_dir("/proc/self/fd").ok()?;
        Some((entries.count() as u64).saturating_sub(1))
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The figures, each `None` where `/proc` did not give it.
#[derive(Debug, Default, PartialEq)]
struct Figures {
    cpu_seconds: Option<f64>,
    resident_bytes: Option<f64>,
    virtual_bytes: Option<f64>,
    open_fds: Option<f64>,
    max_fds: Option<f64>,
    start_time_seconds: Option<f64>,
}

/// The unit of the times in `/proc/<pid>/stat`: the kernel converts them
/// to USER_HZ, which is 100 on every architecture cairn builds for
/// (x86-64, aarch64), whatever the kernel's own tick rate.
const USER_HZ: f64 = 100.0;

impl Figures {
    #[cfg(target_os = "linux")]
    fn read() -> Option<Figures> {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let stat = read("/proc/self/stat").map(|text| parse_stat(&text));
        let (cpu_seconds, start_ticks) = stat.unwrap_or((None, None));
        let status = read("/proc/self/status").unwrap_or_default();
        let boot_seconds = read("/proc/stat").and_then(|text| parse_boot_time(&text));
        let open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|entries| entries.count() as f64);
        Some(Figures {
            cpu_seconds,
            resident_bytes: status_kilobytes(&status, "VmRSS:").map(|kb| kb * 1024.0),
            virtual_bytes: status_kilobytes(&status, "VmSize:").map(|kb| kb * 1024.0),
            open_fds,
            max_fds: read("/proc/self/limits").and_then(|text| parse_max_fds(&text)),
            start_time_seconds: boot_seconds
                .zip(start_ticks)
                .map(|(boot, ticks)| boot + ticks / USER_HZ),
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn read() -> Option<Figures> {
        None
    }
}

/// CPU seconds (user + system) and the start time in ticks after boot,
/// from `/proc/self/stat`. The command name (field 2) may hold spaces and
/// parentheses, so fields are counted after its last `)`.
fn parse_stat(text: &str) -> (Option<f64>, Option<f64>) {
    let Some((_, rest)) = text.rsplit_once(')') else {
        return (None, None);
    };
    // `rest` starts at field 3 (the state): field k is at index k - 3.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |k: usize| fields.get(k - 3).and_then(|f| f.parse::<f64>().ok());
    let cpu = field(14)
        .zip(field(15))
        .map(|(user, system)| (user + system) / USER_HZ);
    (cpu, field(22))
}

/// `btime` of `/proc/stat`: the boot time in seconds since the epoch.
fn parse_boot_time(text: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|value| value.trim().parse().ok())
}

/// A `kB` figure of `/proc/self/status`, such as `VmRSS:   1234 kB`.
fn status_kilobytes(text: &str, key: &str) -> Option<f64> {
    let value = text.lines().find_map(|line| line.strip_prefix(key))?;
    value.split_whitespace().next()?.parse().ok()
}

/// The soft limit of `Max open files` in `/proc/self/limits`.
fn parse_max_fds(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        // A command name with a space and a parenthesis, as a process may
        // name itself.
        let text = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 12345 1000 10";
        let (cpu, start) = parse_stat(text);
        assert_eq!(cpu, Some(3.0));
        assert_eq!(start, Some(12345.0));
        assert_eq!(parse_stat("no parenthesis"), (None, None));
    }

    #[test]
    fn status_limits_and_boot_time_are_parsed() {
        let status = "Name:\tcairn\nVmSize:\t  2048 kB\nVmRSS:\t   512 kB\n";
        assert_eq!(status_kilobytes(status, "VmRSS:"), Some(512.0));
        assert_eq!(status_kilobytes(status, "VmSize:"), Some(2048.0));
        assert_eq!(status_kilobytes(status, "VmSwap:"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 524288               files\n";
        assert_eq!(parse_max_fds(limits), Some(1024.0));
        assert_eq!(
            parse_boot_time("cpu  1 2 3\nbtime 1700000000\n"),
            Some(1.7e9)
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_reports_plausible_figures() {
        let figures = Figures::read().unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let start = figures.start_time_seconds.unwrap();
        assert!(
            start <= now + 1.0 && start > now - 86_400.0,
            "{start} vs {now}"
        );
        assert!(figures.resident_bytes.unwrap() > 1e5, "{figures:?}");
        assert!(
            figures.virtual_bytes >= figures.resident_bytes,
            "{figures:?}"
        );
        assert!(figures.open_fds.unwrap() >= 3.0, "{figures:?}");
        assert!(figures.max_fds >= figures.open_fds, "{figures:?}");
        assert!(figures.cpu_seconds.unwrap() >= 0.0, "{figures:?}");
        let mut out = String::new();
        render(&mut out);
        assert!(
            out.contains("\n# TYPE process_cpu_seconds_total counter\n"),
            "{out}"
        );
        assert!(out.contains("\nprocess_open_fds "), "{out}");
    }
}
