//! Headless Chromium (Debian's `chromium`): loads a file the way a person's browser would, and
//! reports the DOM it built or a screenshot of it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{DEADLINE, tools, wait_for_exit};

/// The browser; `None` (the test skips) when it is missing outside CI.
pub fn chromium() -> Option<PathBuf> {
    tools::required("chromium", "apt-get install chromium")
}

/// The DOM Chromium builds from `file`, serialised.
pub fn dump_dom(chromium: &Path, file: &Path) -> String {
    let profile = tempfile::tempdir().expect("a profile directory");
    run(chromium, profile.path(), &["--dump-dom".to_owned(), url(file)])
}

/// A `width` × `height` screenshot of `file`, as PNG bytes.
pub fn screenshot(chromium: &Path, file: &Path, width: u32, height: u32) -> Vec<u8> {
    let profile = tempfile::tempdir().expect("a profile directory");
    let png = profile.path().join("screenshot.png");
    let args = [format!("--screenshot={}", png.display()), format!("--window-size={width},{height}"), url(file)];
    run(chromium, profile.path(), &args);
    std::fs::read(&png).expect("chromium wrote the screenshot")
}

/// How many pixels of a PNG screenshot are not the white background, and how many it has.
pub fn painted_pixels(png: &[u8]) -> (usize, usize) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut pixels = vec![0; reader.output_buffer_size().expect("a PNG's size")];
    let frame = reader.next_frame(&mut pixels).expect("a PNG frame");
    let channels = frame.color_type.samples();
    let painted = pixels[..frame.buffer_size()].chunks(channels).filter(|pixel| pixel[..3] != [255, 255, 255]).count();
    (painted, (frame.width * frame.height) as usize)
}

fn url(file: &Path) -> String {
    format!("file://{}", file.canonicalize().expect("the page exists").display())
}

/// Runs headless Chromium with a fresh profile and no network of its own (the flags it needs as
/// root in a container); its standard output, once it exits, within the deadline.
fn run(chromium: &Path, profile: &Path, args: &[String]) -> String {
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut pipe, &mut text).map(|_| text).unwrap_or_default()
        })
    };
    let (stdout, stderr) = (read(Box::new(stdout)), read(Box::new(stderr)));
    let status = wait_for_exit(&mut child, &format!("chromium {args:?}"), DEADLINE);
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert!(status.success(), "chromium {args:?}: {status}\n{stderr}");
    stdout
}
