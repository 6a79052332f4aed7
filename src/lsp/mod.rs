//! The language server behind `cascade lsp`: the config's diagnostics while it is typed, and
//! completion, hover, go to definition, find references, rename and code actions, over the
//! Language Server Protocol on standard input and output.
//!
//! Every `*.toml` file of a config directory is one config, as `cascade validate` reads it, with
//! the editor's open buffers in place of the files on disk; every rule runs on every change
//! (debounced), against a schema when one is known (a DDL file, the `--database-url`, or the
//! config's `[settings] database_url`).

mod actions;
mod analysis;
mod completion;
mod diagnostics;
mod documents;
mod hover;
mod keys;
mod navigation;
mod server;
mod symbols;
mod syntax;
mod transport;

use std::path::PathBuf;

use lsp_types::{
    CodeActionKind, CodeActionOptions, CodeActionProviderCapability, CompletionOptions, ExecuteCommandOptions,
    HoverProviderCapability, InitializeResult, OneOf, RenameOptions, SaveOptions, ServerCapabilities, ServerInfo,
    TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions, TextDocumentSyncSaveOptions,
    WorkDoneProgressOptions,
};

/// Where the server finds the config and the schema to check it against.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// The config directory (or file), relative to the workspace root: a file in it belongs to
    /// that config; any other file to the directory it is in (all `*.toml` files below it).
    pub config: PathBuf,
    /// A DDL file to check against, relative to the workspace root (else the `schema`
    /// initialization option).
    pub schema: Option<PathBuf>,
    /// A database whose live schema to check against (else the `databaseUrl` initialization
    /// option, else the config's `[settings] database_url`).
    pub database_url: Option<String>,
}

/// What ends the server other than `exit`.
#[derive(Debug, thiserror::Error)]
pub enum LspError {
    /// The client broke the protocol (no `initialize` first, a message that is not JSON-RPC).
    #[error("language server protocol: {0}")]
    Protocol(String),
    /// Reading or writing the client's streams failed.
    #[error("cannot talk to the client: {0}")]
    Io(#[from] std::io::Error),
    /// The client's input ended before the initialization did.
    #[error("the client's input ended before the initialization")]
    Closed,
}

impl From<lsp_server::ProtocolError> for LspError {
    fn from(error: lsp_server::ProtocolError) -> Self {
        LspError::Protocol(error.to_string())
    }
}

/// Serves one client over standard input and output until it sends `exit` (or closes its
/// input). `Ok(true)` when `shutdown` came first, as the protocol asks: the process then exits
/// with 0, else with 1. An error when the input broke (a header that cannot be read).
pub fn serve_stdio(options: ServerOptions) -> Result<bool, LspError> {
    let (connection, transport) = transport::Transport::stdio();
    let result = serde_json::to_value(InitializeResult {
        capabilities: capabilities(),
        server_info: Some(ServerInfo {
            name: "cascade".to_owned(),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        }),
    })
    .map_err(|error| LspError::Protocol(error.to_string()))?;
    let server = match server::Server::initialize(connection, options, result) {
        Ok(server) => server,
        // The reader has ended, and a header it could not read is the reason to tell.
        Err(LspError::Closed) => return Err(transport.join().err().map_or(LspError::Closed, LspError::Io)),
        Err(error) => return Err(error),
    };
    let clean = server.run();
    transport.join()?;
    Ok(clean)
}

fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(TextDocumentSyncKind::INCREMENTAL),
            save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions { include_text: Some(false) })),
            ..TextDocumentSyncOptions::default()
        })),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(["\"", "'", "[", ".", "=", "{", ","].map(str::to_owned).to_vec()),
            ..CompletionOptions::default()
        }),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        rename_provider: Some(OneOf::Right(RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: WorkDoneProgressOptions::default(),
        })),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![CodeActionKind::QUICKFIX]),
            ..CodeActionOptions::default()
        })),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: vec![actions::COPY.to_owned()],
            ..ExecuteCommandOptions::default()
        }),
        ..ServerCapabilities::default()
    }
}
