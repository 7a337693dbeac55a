//! Progress of a run on standard error: a bar on a terminal, plain lines
//! otherwise (a run under `nohup` or with standard error in a file).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Longest wait between two plain lines.
const LINE_EVERY: Duration = Duration::from_secs(30);

/// How progress is shown.
pub(crate) enum Progress {
    /// Nothing (`progress` off).
    Hidden,
    /// An indicatif bar over queries (standard error is a terminal).
    Bar(ProgressBar),
    /// A plain line every tenth of the units or every 30 s, whichever comes
    /// first.
    Lines(Lines),
}

/// State of the plain-line display.
pub(crate) struct Lines {
    label: String,
    started: Instant,
    last_line: Instant,
    units_total: usize,
    units_done: usize,
    /// Work = docs + queries: ingesting a doc and asking a query each
    /// count one, so the ETA follows large units as well as small ones.
    work_total: usize,
    work_done: usize,
    queries_total: usize,
    queries_done: usize,
    /// Tenths of the units reported so far.
    tenths: usize,
}

impl Progress {
    /// Progress over `units` units holding `docs` docs and `queries`
    /// queries, named `label` in plain lines (the mode, e.g. `hybrid`).
    pub(crate) fn new(show: bool, label: &str, units: usize, docs: usize, queries: usize) -> Self {
        if !show {
            return Progress::Hidden;
        }
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(queries as u64);
            if let Ok(style) =
                ProgressStyle::with_template("{bar:30} {pos}/{len} queries · {msg} [{elapsed_precise} < {eta_precise}]")
            {
                bar.set_style(style);
            }
            return Progress::Bar(bar);
        }
        let now = Instant::now();
        Progress::Lines(Lines {
            label: if label.is_empty() { "eval".into() } else { label.to_string() },
            started: now,
            last_line: now,
            units_total: units,
            units_done: 0,
            work_total: docs + queries,
            work_done: 0,
            queries_total: queries,
            queries_done: 0,
            tenths: 0,
        })
    }

    /// A unit of `docs` docs is ingested.
    pub(crate) fn unit_started(&mut self, name: &str, docs: usize) {
        match self {
            Progress::Bar(b) => b.set_message(name.to_string()),
            Progress::Lines(l) => {
                l.work_done += docs;
                l.maybe_print(false);
            }
            Progress::Hidden => {}
        }
    }

    /// One query is scored.
    pub(crate) fn query_done(&mut self) {
        match self {
            Progress::Bar(b) => b.inc(1),
            Progress::Lines(l) => {
                l.work_done += 1;
                l.queries_done += 1;
                l.maybe_print(false);
            }
            Progress::Hidden => {}
        }
    }

    /// A unit is finished.
    pub(crate) fn unit_done(&mut self) {
        if let Progress::Lines(l) = self {
            l.units_done += 1;
            let tenths = (l.units_done * 10).checked_div(l.units_total).unwrap_or(10);
            let due = tenths > l.tenths;
            l.tenths = l.tenths.max(tenths);
            l.maybe_print(due);
        }
    }

    /// The run is over: clears the bar.
    pub(crate) fn finish(&self) {
        if let Progress::Bar(b) = self {
            b.finish_and_clear();
        }
    }
}

impl Lines {
    fn maybe_print(&mut self, due: bool) {
        if !due && self.last_line.elapsed() < LINE_EVERY {
            return;
        }
        self.last_line = Instant::now();
        eprintln!("{}", self.line());
    }

    /// `progress hybrid: 3/10 units, 412/1986 queries, 45 s elapsed, ETA 105 s`.
    fn line(&self) -> String {
        let elapsed = self.started.elapsed().as_secs_f64();
        let eta = if self.work_done == 0 {
            "?".to_string()
        } else {
            let left = self.work_total.saturating_sub(self.work_done) as f64;
            format!("{:.0} s", elapsed * left / self.work_done as f64)
        };
        format!(
            "progress {}: {}/{} units, {}/{} queries, {elapsed:.0} s elapsed, ETA {eta}",
            self.label, self.units_done, self.units_total, self.queries_done, self.queries_total
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line_reports_counts_and_eta() {
        let mut l = Lines {
            label: "lexical".into(),
            started: Instant::now(),
            last_line: Instant::now(),
            units_total: 4,
            units_done: 0,
            work_total: 100,
            work_done: 0,
            queries_total: 20,
            queries_done: 0,
            tenths: 0,
        };
        assert!(l.line().ends_with("ETA ?"), "{}", l.line());
        l.units_done = 1;
        l.work_done = 50;
        l.queries_done = 5;
        let line = l.line();
        assert!(line.starts_with("progress lexical: 1/4 units, 5/20 queries, "), "{line}");
        assert!(line.contains(" s elapsed, ETA "), "{line}");
    }
}
