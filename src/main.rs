//! The `cascade` binary: the command line over the library.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
