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

/// The SVG of `t`: one bar per bucket, segments by kind, a legend, the
/// bucket start dates on the x axis and event counts on the y axis.
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
        let span = t.to - t.from;
        let label = |i: &u32| {
            let b = t.buckets.get(usize::try_from(*i).unwrap_or(usize::MAX));
            b.map(|b| {
                if span > chrono::Duration::days(2) {
                    b.start.format("%Y-%m-%d").to_string()
                } else if t.bucket_micros >= 60_000_000 {
                    b.start.format("%m-%d %H:%M").to_string()
                } else {
                    // Buckets under a minute: the time of day, to the digit
                    // that tells them apart (`12:28:21.396`).
                    let full = t.label(b.start);
                    full.get(11..full.len() - 1).unwrap_or(&full).to_string()
                }
            })
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
        for (k, (name, color, count)) in SERIES.iter().enumerate() {
            let bars = t.buckets.iter().enumerate().filter_map(|(i, b)| {
                let below: u64 = SERIES[..k].iter().map(|s| (s.2)(b)).sum();
                let here = count(b);
                let x = u32::try_from(i).ok()?;
                (here > 0).then(|| Rectangle::new([(x, below), (x + 1, below + here)], color.filled()))
            });
            let color = *color;
            chart
                .draw_series(bars)
                .map_err(|e| e.to_string())?
                .label(*name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}
