//! A figure in the formats a paper needs, converted from its SVG: PDF (vector, fonts embedded,
//! for LaTeX) and PNG (raster, for slides and documents that take no vector graphics).
//!
//! Every figure is drawn once, as SVG, by plotters; `resvg` rasterises that SVG and `svg2pdf`
//! turns it into PDF, both in Rust (no external program, the same output on every machine with
//! the same font). A second drawing stack (matplotlib from the Python package) would make every
//! figure exist twice and drift; converting one drawing keeps the formats identical.
//!
//! Text needs a font: the system's DejaVu Sans (Debian's `fonts-dejavu-core`, installed by
//! `scripts/setup.sh`) stands for the SVG's `sans-serif`. Without any font the conversion fails
//! with an error saying so rather than writing figures without text.

use std::sync::{Arc, OnceLock};

use crate::error::FigureError;

/// A file format of a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// Scalable vector graphics: plotters' output, text as text.
    Svg,
    /// PDF, vector, with the font subset embedded.
    Pdf,
    /// PNG at [`PNG_DPI`].
    Png,
}

impl Format {
    /// Every format, in the order files are written.
    pub const ALL: [Format; 3] = [Format::Svg, Format::Pdf, Format::Png];

    /// The file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Svg => "svg",
            Format::Pdf => "pdf",
            Format::Png => "png",
        }
    }

    /// The format a file name's extension stands for.
    pub fn of_extension(ext: &str) -> Option<Format> {
        Format::ALL
            .into_iter()
            .find(|f| f.extension().eq_ignore_ascii_case(ext))
    }
}

/// Resolution of PNG output, dots per inch (print quality; an SVG px is 1/96 in).
pub const PNG_DPI: f32 = 300.0;

/// The font family the SVG's generic `sans-serif` resolves to.
const SANS: &str = "DejaVu Sans";

/// The system's fonts, loaded once per process.
fn fonts() -> Result<Arc<resvg::usvg::fontdb::Database>, FigureError> {
    static FONTS: OnceLock<Arc<resvg::usvg::fontdb::Database>> = OnceLock::new();
    let db = FONTS.get_or_init(|| {
        let mut db = resvg::usvg::fontdb::Database::new();
        db.load_system_fonts();
        db.set_sans_serif_family(SANS);
        Arc::new(db)
    });
    if db.is_empty() {
        return Err(FigureError::Export(
            "no font found for the figure's text (install Debian's fonts-dejavu-core, as \
             scripts/setup.sh does)"
                .into(),
        ));
    }
    Ok(db.clone())
}

fn tree(svg: &str) -> Result<resvg::usvg::Tree, FigureError> {
    let options = resvg::usvg::Options {
        font_family: SANS.into(),
        fontdb: fonts()?,
        ..resvg::usvg::Options::default()
    };
    resvg::usvg::Tree::from_str(svg, &options)
        .map_err(|e| FigureError::Export(format!("cannot read the figure's SVG: {e}")))
}

/// `svg` converted to `format`.
pub fn convert(svg: &str, format: Format) -> Result<Vec<u8>, FigureError> {
    match format {
        Format::Svg => Ok(svg.as_bytes().to_vec()),
        Format::Pdf => {
            let tree = tree(svg)?;
            // Sizes in the SVG are CSS px (1/96 in): a 3.5 in figure stays 3.5 in on the page.
            let page = svg2pdf::PageOptions { dpi: 96.0 };
            svg2pdf::to_pdf(&tree, svg2pdf::ConversionOptions::default(), page)
                .map_err(|e| FigureError::Export(format!("cannot convert to PDF: {e}")))
        }
        Format::Png => {
            let tree = tree(svg)?;
            let scale = PNG_DPI / 96.0;
            let size =
                tree.size().to_int_size().scale_by(scale).ok_or_else(|| {
                    FigureError::Export("the figure is too large for a PNG".into())
                })?;
            let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
                .ok_or_else(|| FigureError::Export("the figure has no area".into()))?;
            pixmap.fill(resvg::tiny_skia::Color::WHITE);
            resvg::render(
                &tree,
                resvg::tiny_skia::Transform::from_scale(scale, scale),
                &mut pixmap.as_mut(),
            );
            pixmap
                .encode_png()
                .map_err(|e| FigureError::Export(format!("cannot encode the PNG: {e}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SVG: &str = r#"<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100" viewBox="0 0 200 100"><rect width="200" height="100" fill="white"/><text x="10" y="50" font-family="sans-serif" font-size="20">quiclab</text></svg>"#;

    #[test]
    fn a_figure_converts_to_pdf_and_png_with_its_text() {
        let pdf = convert(SVG, Format::Pdf).expect("pdf");
        assert!(pdf.starts_with(b"%PDF-"));
        // The font is embedded (text stays text, selectable in a viewer).
        assert!(
            pdf.windows(b"FontFile".len()).any(|w| w == b"FontFile"),
            "no embedded font"
        );
        let png = convert(SVG, Format::Png).expect("png");
        assert!(png.starts_with(b"\x89PNG"));
        // 200 × 100 px at 96 dpi is 625 × 313 at 300 dpi, rounded (IHDR width and height).
        let w = u32::from_be_bytes([png[16], png[17], png[18], png[19]]);
        let h = u32::from_be_bytes([png[20], png[21], png[22], png[23]]);
        assert_eq!((w, h), (625, 313));
        // Text was drawn: some pixels are dark.
        let without_text = SVG.replace("quiclab", "");
        assert_ne!(convert(&without_text, Format::Png).expect("png"), png);
    }

    #[test]
    fn extensions_name_formats() {
        assert_eq!(Format::of_extension("PDF"), Some(Format::Pdf));
        assert_eq!(Format::of_extension("jpg"), None);
        for f in Format::ALL {
            assert_eq!(Format::of_extension(f.extension()), Some(f));
        }
    }
}
