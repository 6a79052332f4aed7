//! The rules' diagnostics as the editor shows them: one list per file, each with its code,
//! severity, range, message and help, and the other places that take part.

use lsp_types::{DiagnosticRelatedInformation, DiagnosticSeverity, NumberOrString, Url};

use super::analysis::Analysis;
use crate::diagnostic::{Diagnostic, Severity};

/// What the editor's diagnostics say they come from.
pub(crate) const SOURCE: &str = "cascade";

pub(crate) fn to_lsp(analysis: &Analysis, diagnostic: &Diagnostic) -> lsp_types::Diagnostic {
    let location = &diagnostic.location;
    let severity = match diagnostic.severity {
        Severity::Error => DiagnosticSeverity::ERROR,
        Severity::Warning => DiagnosticSeverity::WARNING,
        Severity::Note => DiagnosticSeverity::INFORMATION,
    };
    let message = match &diagnostic.help {
        Some(help) => format!("{}\nhelp: {help}", diagnostic.message),
        None => diagnostic.message.clone(),
    };
    let related: Vec<DiagnosticRelatedInformation> = diagnostic
        .related
        .iter()
        .filter(|(place, _)| place.file < analysis.files.len())
        .map(|(place, label)| DiagnosticRelatedInformation {
            location: analysis.location(place.file, &place.span),
            message: label.clone(),
        })
        .collect();
    lsp_types::Diagnostic {
        range: analysis.range(location.file, &location.span),
        severity: Some(severity),
        code: Some(NumberOrString::String(diagnostic.code.as_str().to_owned())),
        code_description: None,
        source: Some(SOURCE.to_owned()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        tags: None,
        data: None,
    }
}

/// Every file's diagnostics (an empty list for a clean file), with the version of the open
/// document they are of.
pub(crate) fn by_file(analysis: &Analysis) -> Vec<(Url, Option<i32>, Vec<lsp_types::Diagnostic>)> {
    let mut files: Vec<(Url, Option<i32>, Vec<lsp_types::Diagnostic>)> =
        analysis.files.iter().map(|file| (file.uri.clone(), file.version, Vec::new())).collect();
    for diagnostic in &analysis.loaded.diagnostics {
        if let Some((_, _, list)) = files.get_mut(diagnostic.location.file) {
            list.push(to_lsp(analysis, diagnostic));
        }
    }
    files
}
