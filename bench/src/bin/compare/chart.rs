//! The charts of the ratios of the medians to `tokio::time`'s: SVG
//! (plotters, SVG backend only) and text.

use crate::report::{Column, Row};

/// The charted ratios to tokio: name, column, SVG colour (RGB).
const SERIES: [(&str, Column, (u8, u8, u8)); 3] = [
    ("tickwheel", Column::Tickwheel, (0x1f, 0x77, 0xb4)),
    ("tokio alt", Column::TokioAlt, (0x2c, 0xa0, 0x2c)),
    ("pingora", Column::Pingora, (0xff, 0x7f, 0x0e)),
];

pub fn chart(rows: &[Row], path: &std::path::Path, caption: &str) -> Result<(), String> {
    use plotters::prelude::*;

    const LO: f64 = 0.1;
    const HI: f64 = 100.0;
    let charted: Vec<&Row> = rows.iter().filter(|r| r.charted).collect();
    let n = charted.len();
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), (LO..HI).log_scale())
        .map_err(|e| e.to_string())?;
    let labels: Vec<&str> = charted.iter().map(|r| r.short.as_str()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                labels
                    .get(i as usize)
                    .map_or(String::new(), |l| l.to_string())
            } else {
                String::new()
            }
        })
        .y_desc("ratio of medians to tokio::time's (log scale, lower is better)")
        .y_label_formatter(&|y| format!("{y}"))
        .draw()
        .map_err(|e| e.to_string())?;
    const WIDTH: f64 = 0.26;
    for (k, (name, column, (r, g, b))) in SERIES.into_iter().enumerate() {
        let color = RGBColor(r, g, b);
        let offset = -1.5 * WIDTH + k as f64 * WIDTH;
        let bars: Vec<_> = charted
            .iter()
            .enumerate()
            .filter_map(|(i, row)| {
                let r = row.ratio_to_tokio(column)?;
                // Outside 0.1-100 a bar stops at the edge; the table has the value.
                let r = r.clamp(LO, HI);
                let x = i as f64 + offset;
                let (a, b) = if r < 1.0 { (r, 1.0) } else { (1.0, r) };
                Some(Rectangle::new([(x, a), (x + WIDTH, b)], color.filled()))
            })
            .collect();
        chart
            .draw_series(bars)
            .map_err(|e| e.to_string())?
            .label(format!("{name} / tokio"))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
            BLACK.stroke_width(1),
        )))
        .map_err(|e| e.to_string())?
        .label("tokio::time = 1")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], BLACK));
    // Each ratio target of tickwheel's, across its workload's bars.
    let red = RGBColor(0xd6, 0x27, 0x28);
    let marks: Vec<_> = charted
        .iter()
        .enumerate()
        .filter_map(|(i, row)| {
            let at = row.target?;
            let x = i as f64;
            Some(PathElement::new(
                vec![(x - 0.45, at), (x + 0.45, at)],
                red.stroke_width(2),
            ))
        })
        .collect();
    chart
        .draw_series(marks)
        .map_err(|e| e.to_string())?
        .label("tickwheel's target")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], red.stroke_width(2)));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

/// The same ratios as bars of text, for a README that must render where
/// images from the repository do not (crates.io, docs.rs): one line per
/// charted workload and system, `|` marking tokio's 1.0, bars scaled
/// linearly up to 2.0 (longer ones are cut and marked `>`).
pub fn text_chart(rows: &[Row]) -> String {
    const WIDTH: f64 = 40.0; // characters for a ratio of 2.0
    let bar = |r: f64| {
        let cells = ((r.min(2.0) / 2.0) * WIDTH).round() as usize;
        let tokio_at = (WIDTH / 2.0) as usize;
        let mut line: String = (0..cells.max(tokio_at + 1))
            .map(|i| match (i < cells, i == tokio_at) {
                (_, true) => '|',
                (true, false) => '#',
                (false, false) => ' ',
            })
            .collect();
        if r > 2.0 {
            line.push('>');
        }
        line
    };
    let mut out = String::from("ratio of medians to tokio::time's (| = 1.0, lower is better)\n");
    for row in rows.iter().filter(|r| r.charted) {
        for (name, column, _) in SERIES {
            if let Some(r) = row.ratio_to_tokio(column) {
                let target = match (column, row.target) {
                    (Column::Tickwheel, Some(t)) => format!("  (target {t})"),
                    _ => String::new(),
                };
                out.push_str(&format!(
                    "{:<8} {:<9} {:<42} {r:.2}{target}\n",
                    row.short,
                    name,
                    bar(r)
                ));
            }
        }
    }
    out
}
