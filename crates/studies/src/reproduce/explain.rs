//! The study doc's explanation of its results, carried into the study's report: the sections of
//! `docs/studies/<study>.md` that say where the study agrees with its paper and why, rendered
//! from Markdown (images left out: they are the doc's own copies of the report's figures).

use pulldown_cmark::{html, Event, Options, Parser, Tag, TagEnd};

/// Where a study's explanation lives.
#[derive(Debug)]
pub struct Explanation {
    /// The doc's path in the repository (shown in the report).
    pub doc: &'static str,
    /// The doc's text.
    pub text: &'static str,
    /// The `## ` headings of the sections carried into the report, in order.
    pub sections: &'static [&'static str],
}

impl Explanation {
    /// The sections' Markdown; a heading the doc does not have is left out.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        for want in self.sections {
            let heading = format!("## {want}");
            let Some(start) = self.text.lines().position(|l| l.trim_end() == heading) else {
                continue;
            };
            let body: Vec<&str> = self
                .text
                .lines()
                .skip(start + 1)
                .take_while(|l| !l.starts_with("## "))
                .collect();
            out.push_str(&format!("### {want}\n{}\n\n", body.join("\n")));
        }
        out
    }

    /// The sections as a report section, under a heading that names the doc.
    pub fn html(&self) -> String {
        let md = self.markdown();
        if md.is_empty() {
            return String::new();
        }
        let mut options = Options::empty();
        options.insert(Options::ENABLE_TABLES);
        let mut in_image = 0usize;
        let events = Parser::new_ext(&md, options).filter(|e| match e {
            Event::Start(Tag::Image { .. }) => {
                in_image += 1;
                false
            }
            Event::End(TagEnd::Image) => {
                in_image = in_image.saturating_sub(1);
                false
            }
            // Raw HTML in a doc is not carried into a page that runs no script.
            Event::Html(_) | Event::InlineHtml(_) => false,
            _ => in_image == 0,
        });
        let mut body = String::new();
        html::push_html(&mut body, events);
        format!(
            "<h2 id=\"explanation\">What the study found, and why</h2>\n<p class=\"note\">From \
             <code>{}</code>; the numbers it quotes are from the run it names there, the tables \
             above from this one.</p>\n<div class=\"explanation\">{body}</div>\n",
            figures::html::escape(self.doc)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Study\n\nIntro.\n\n## Setup\n\nno\n\n## Why\n\nQUIC is **faster** <b>x</b>.\n\n![fig](figures/a.svg)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n## Later\n\nno\n";

    #[test]
    fn the_named_sections_are_rendered_without_images_or_raw_html() {
        let e = Explanation {
            doc: "docs/studies/x.md",
            text: DOC,
            sections: &["Why", "Missing"],
        };
        let h = e.html();
        assert!(h.contains("<h3>Why</h3>"), "{h}");
        assert!(h.contains("<strong>faster</strong>"), "{h}");
        assert!(h.contains("<table>"), "{h}");
        assert!(!h.contains("<img") && !h.contains("<b>x</b>"), "{h}");
        assert!(!h.contains("Setup") && !h.contains("Later"), "{h}");
        assert!(h.contains("docs/studies/x.md"), "{h}");
    }

    #[test]
    fn every_studys_sections_exist_in_its_doc() {
        for s in crate::reproduce::STUDIES {
            let Some(e) = &s.explanation else { continue };
            for want in e.sections {
                assert!(
                    e.text.lines().any(|l| l.trim_end() == format!("## {want}")),
                    "{}: no section {want:?} in {}",
                    s.name,
                    e.doc
                );
            }
        }
    }
}
