//! Workflow-command escaping, as the GitHub Actions runner expects it (`::error file=F::text`).

/// The text of an annotation.
pub(crate) fn data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// A property value (`file=`, `title=`).
pub(crate) fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}
