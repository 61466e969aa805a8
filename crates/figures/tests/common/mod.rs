//! Measures shared by the figure tests.

/// The smallest text of an SVG in pt when the figure is printed `width_pt` wide.
pub fn smallest_text_pt(svg: &str, width_pt: f64) -> f64 {
    let doc = roxmltree::Document::parse(svg).expect("valid SVG");
    let root = doc.root_element();
    let view_w: f64 = root
        .attribute("viewBox")
        .and_then(|v| v.split_whitespace().nth(2))
        .and_then(|w| w.parse().ok())
        .expect("viewBox");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.attribute("font-size")?.parse::<f64>().ok())
        .map(|units| units * width_pt / view_w)
        .fold(f64::MAX, f64::min)
}
