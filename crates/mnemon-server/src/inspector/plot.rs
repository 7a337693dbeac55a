//! The timeline plot: events per time bucket, stacked by kind, drawn by
//! `plotters` as an SVG document.

use plotters::prelude::*;

use mnemon::{Timeline, TimelineBucket};

/// Plot size in pixels (the page scales it to its width).
const WIDTH: u32 = 960;
const HEIGHT: u32 = 360;

/// One series of the plot: its kind, colour and count in a bucket.
type Series = (&'static str, RGBColor, fn(&TimelineBucket) -> u64);

/// The kinds in stacking order, with their colours (Tableau 10, a common
/// qualitative palette that stays distinct for colour-blind readers).
const SERIES: &[Series] = &[
    ("observed", RGBColor(0x4e, 0x79, 0xa7), |b| b.observed),
    ("extracted", RGBColor(0x59, 0xa1, 0x4f), |b| b.extracted),
    ("superseded", RGBColor(0xf2, 0x8e, 0x2b), |b| b.superseded),
    ("accessed", RGBColor(0xba, 0xb0, 0xac), |b| b.accessed),
    ("forgotten", RGBColor(0xe1, 0x57, 0x59), |b| b.forgotten),
    ("archived", RGBColor(0x76, 0xb7, 0xb2), |b| b.archived),
];

/// The names the series carry on a commit-time timeline, in [`SERIES`]
/// order.
pub(super) const COMMIT_NAMES: [&str; 6] = ["observed", "extracted", "superseded", "accessed", "forgotten", "archived"];

/// The names the series carry on a valid-time timeline: turns by when they
/// were said, memory versions by when they became true and stopped being
/// true (the other three series are empty there).
pub(super) const VALID_NAMES: [&str; 6] =
    ["turn said", "became true", "stopped being true", "accessed", "forgotten", "archived"];

/// The legend of a plot, for the page to show beside it: each non-empty
/// series' name and colour (`#rrggbb`).
pub(super) fn legend(t: &Timeline, names: &[&str; 6]) -> Vec<(String, String)> {
    SERIES
        .iter()
        .zip(names)
        .filter(|((_, _, count), _)| t.buckets.iter().any(|b| count(b) > 0))
        .map(|((_, c, _), name)| (name.to_string(), format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)))
        .collect()
}

/// The `strftime` format of tick labels over a span of `span_micros`: the
/// coarsest unit that still tells ticks apart, from years to milliseconds.
pub(super) fn tick_format(span_micros: i64) -> &'static str {
    const S: i64 = 1_000_000;
    match span_micros {
        s if s > 3 * 365 * 86_400 * S => "%Y",
        s if s > 90 * 86_400 * S => "%Y-%m",
        s if s > 3 * 86_400 * S => "%m-%d",
        s if s > 12 * 3_600 * S => "%m-%d %H:%M",
        s if s > 5 * 60 * S => "%H:%M",
        s if s > 10 * S => "%H:%M:%S",
        _ => "%S.%3fs",
    }
}

/// The SVG of `t`: one bar per bucket, segments by kind, the bucket start
/// times on the x axis (ticks in [`tick_format`]) and event counts on the
/// y axis. The legend is not drawn inside: the page shows [`legend`]
/// beside the plot.
///
/// # Errors
/// The drawing backend's error, as text (writing to a string does not fail
/// in practice).
pub(super) fn timeline_svg(t: &Timeline) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let n = u32::try_from(t.buckets.len()).unwrap_or(u32::MAX).max(1);
        let top = t.buckets.iter().map(TimelineBucket::total).max().unwrap_or(0).max(1);
        // A little headroom above the highest bar.
        let ymax = top + top / 10 + 1;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d(0u32..n, 0u64..ymax)
            .map_err(|e| e.to_string())?;
        let format = tick_format((t.to - t.from).num_microseconds().unwrap_or(i64::MAX));
        let label = |i: &u32| {
            t.buckets
                .get(usize::try_from(*i).unwrap_or(usize::MAX))
                .map(|b| b.start.format(format).to_string())
                .unwrap_or_default()
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(8)
            .y_labels(6)
            .x_label_formatter(&label)
            .y_desc("events")
            .draw()
            .map_err(|e| e.to_string())?;
        for (k, (_, color, count)) in SERIES.iter().enumerate() {
            let bars = t.buckets.iter().enumerate().filter_map(|(i, b)| {
                let below: u64 = SERIES[..k].iter().map(|s| (s.2)(b)).sum();
                let here = count(b);
                let x = u32::try_from(i).ok()?;
                (here > 0).then(|| Rectangle::new([(x, below), (x + 1, below + here)], color.filled()))
            });
            chart.draw_series(bars).map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_fit_every_span_from_milliseconds_to_years() {
        let s = 1_000_000i64;
        assert_eq!(tick_format(330_000), "%S.%3fs");
        assert_eq!(tick_format(90 * s), "%H:%M:%S");
        assert_eq!(tick_format(2 * 3600 * s), "%H:%M");
        assert_eq!(tick_format(49 * 86_400 * s), "%m-%d");
        assert_eq!(tick_format(400 * 86_400 * s), "%Y-%m");
        assert_eq!(tick_format(10 * 365 * 86_400 * s), "%Y");
    }
}
