//! The server loop: messages from the client, analyses from the worker thread, and the debounce
//! timer, on one thread. Requests that need positions in the config wait for an analysis that
//! has seen every change made before them; completion answers at once from the latest one.

use std::collections::{HashMap, HashSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, select};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    Cancel, DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument, Notification as _,
    PublishDiagnostics, ShowMessage,
};
use lsp_types::request::{
    CodeActionRequest, Completion, ExecuteCommand, GotoDefinition, HoverRequest, PrepareRenameRequest, References,
    Rename, Request as _, Shutdown,
};
use lsp_types::{
    CancelParams, CodeActionParams, CompletionParams, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DidSaveTextDocumentParams, ExecuteCommandParams, GotoDefinitionParams, HoverParams,
    MessageType, NumberOrString, PublishDiagnosticsParams, ReferenceParams, RenameParams, ShowMessageParams,
    TextDocumentPositionParams, Url,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::analysis::{Analysis, Analyzer, Job, Outcome, SchemaSource};
use super::documents::{Document, Documents};
use super::{LspError, ServerOptions, actions, completion, diagnostics, hover, navigation};

/// How long the server waits after a change for the next before it analyses the config: the
/// changes of one burst of typing are analysed once.
const DEBOUNCE: Duration = Duration::from_millis(10);

/// The state of one config directory.
#[derive(Default)]
struct Config {
    analysis: Option<Arc<Analysis>>,
    /// Counts the changes to the config's files.
    generation: u64,
    running: bool,
    /// When to analyse it next.
    due: Option<Instant>,
    refresh_schema: bool,
    /// The files of the latest analysis, and the error it ended with, if any.
    files: Vec<Url>,
    error: Option<String>,
}

/// A request waiting for an analysis of `config` that has seen change `generation`.
struct Waiting {
    request: Request,
    config: PathBuf,
    generation: u64,
}

struct Worker {
    jobs: Sender<Job>,
    outcomes: Receiver<(u64, Outcome)>,
}

impl Worker {
    fn spawn(source: SchemaSource) -> std::io::Result<Self> {
        let (jobs, queue) = crossbeam_channel::unbounded::<Job>();
        let (done, outcomes) = crossbeam_channel::unbounded();
        std::thread::Builder::new().name("cascade-lsp-analysis".to_owned()).spawn(move || {
            let mut analyzer = Analyzer::new(source);
            for job in queue {
                let (dir, generation) = (job.dir.clone(), job.generation);
                let outcome = catch_unwind(AssertUnwindSafe(|| analyzer.analyze(job))).unwrap_or_else(|panic| {
                    let analysis = Err(format!("the analysis failed: {}", panic_message(panic.as_ref())));
                    Outcome { dir, analysis, messages: Vec::new() }
                });
                if done.send((generation, outcome)).is_err() {
                    break;
                }
            }
        })?;
        Ok(Self { jobs, outcomes })
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

pub(super) struct Server {
    connection: Connection,
    /// The configured config path (absolute), and its canonical form when it exists.
    config_path: PathBuf,
    config_canonical: Option<PathBuf>,
    documents: Documents,
    configs: HashMap<PathBuf, Config>,
    worker: Worker,
    published: HashMap<Url, (Option<i32>, Vec<lsp_types::Diagnostic>)>,
    waiting: Vec<Waiting>,
    shut_down: bool,
}

/// The initialization options the server reads.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializationOptions {
    schema: Option<PathBuf>,
    database_url: Option<String>,
}

impl Server {
    /// Answers the client's `initialize` with `result`, once the server is set up.
    pub(super) fn initialize(connection: Connection, options: ServerOptions, result: Value) -> Result<Self, LspError> {
        // A closed channel is the reader's end: the input ended or broke.
        let closed = |error: lsp_server::ProtocolError| {
            if error.channel_is_disconnected() { LspError::Closed } else { error.into() }
        };
        let (id, params) = connection.initialize_start().map_err(closed)?;
        let params: lsp_types::InitializeParams = serde_json::from_value(params)
            .map_err(|error| LspError::Protocol(format!("invalid initialize parameters: {error}")))?;
        // Clients without workspace folders send only the (deprecated) root URI.
        #[allow(deprecated)]
        let root_uri = params.root_uri.as_ref();
        let root = params
            .workspace_folders
            .as_ref()
            .and_then(|folders| folders.first())
            .and_then(|folder| folder.uri.to_file_path().ok())
            .or_else(|| root_uri.and_then(|uri| uri.to_file_path().ok()))
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let given: InitializationOptions =
            params.initialization_options.and_then(|value| serde_json::from_value(value).ok()).unwrap_or_default();
        let source = SchemaSource {
            ddl: options.schema.or(given.schema).map(|path| root.join(path)),
            database_url: options.database_url.or(given.database_url),
        };
        let config_path = root.join(&options.config);
        let worker = Worker::spawn(source)?;
        connection.initialize_finish(id, result).map_err(closed)?;
        Ok(Self {
            connection,
            config_canonical: std::fs::canonicalize(&config_path).ok(),
            config_path,
            documents: Documents::default(),
            configs: HashMap::new(),
            worker,
            published: HashMap::new(),
            waiting: Vec::new(),
            shut_down: false,
        })
    }

    /// Serves until `exit`; whether `shutdown` came first.
    pub(super) fn run(mut self) -> bool {
        loop {
            self.start_due();
            let due = self.configs.values().filter(|config| !config.running).filter_map(|config| config.due).min();
            let timer = match due {
                Some(due) => crossbeam_channel::at(due),
                None => crossbeam_channel::never(),
            };
            select! {
                recv(self.connection.receiver) -> message => match message {
                    Ok(Message::Request(request)) => self.on_request(request),
                    Ok(Message::Notification(notification)) if notification.method == "exit" => return self.shut_down,
                    Ok(Message::Notification(notification)) => self.on_notification(notification),
                    Ok(Message::Response(_)) => {}
                    // The client went away without `exit`.
                    Err(_) => return false,
                },
                recv(self.worker.outcomes) -> outcome => {
                    if let Ok((generation, outcome)) = outcome {
                        self.on_outcome(generation, outcome);
                    }
                }
                recv(timer) -> _ => {}
            }
        }
    }

    fn send(&self, message: impl Into<Message>) {
        // A client that stopped reading also stops writing: the loop ends on its closed input.
        let _ = self.connection.sender.send(message.into());
    }

    fn notify<N: lsp_types::notification::Notification>(&self, params: N::Params) {
        self.send(Notification::new(N::METHOD.to_owned(), params));
    }

    fn show(&self, typ: MessageType, message: String) {
        self.notify::<ShowMessage>(ShowMessageParams { typ, message: format!("cascade: {message}") });
    }

    fn error(&self, id: RequestId, code: ErrorCode, message: String) {
        self.send(Response::new_err(id, code as i32, message));
    }

    /// The config directory a file belongs to: the configured one when the file is in it (or
    /// is it), else the directory the file is in.
    fn config_of(&self, path: &Path) -> PathBuf {
        let canonical = self.config_canonical.as_deref();
        let is_config = |candidate: &Path| {
            candidate == self.config_path
                || canonical.is_some_and(|config| std::fs::canonicalize(candidate).is_ok_and(|c| c == config))
        };
        match path.ancestors().find(|candidate| is_config(candidate)) {
            Some(config) => config.to_owned(),
            None => path.parent().map(Path::to_owned).unwrap_or_default(),
        }
    }

    /// Something in `config` changed: analyse it after `delay`.
    fn changed(&mut self, config: PathBuf, delay: Duration) {
        let state = self.configs.entry(config).or_default();
        state.generation += 1;
        state.due = Some(Instant::now() + delay);
    }

    fn on_notification(&mut self, notification: Notification) {
        match notification.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let Some(params) = parse::<DidOpenTextDocumentParams>(notification.params) else { return };
                let Ok(path) = params.text_document.uri.to_file_path() else { return };
                let config = self.config_of(&path);
                let text = params.text_document.text;
                let document = Document { text, version: params.text_document.version, path, config: config.clone() };
                self.documents.open(params.text_document.uri, document);
                self.changed(config, Duration::ZERO);
            }
            DidChangeTextDocument::METHOD => {
                let Some(params) = parse::<DidChangeTextDocumentParams>(notification.params) else { return };
                let (uri, version) = (&params.text_document.uri, params.text_document.version);
                if let Some(config) = self.documents.change(uri, version, params.content_changes) {
                    let config = config.to_owned();
                    self.changed(config, DEBOUNCE);
                }
            }
            DidSaveTextDocument::METHOD => {
                let Some(params) = parse::<DidSaveTextDocumentParams>(notification.params) else { return };
                if let Some(config) = self.documents.get(&params.text_document.uri).map(|d| d.config.clone()) {
                    self.configs.entry(config.clone()).or_default().refresh_schema = true;
                    self.changed(config, DEBOUNCE);
                }
            }
            DidCloseTextDocument::METHOD => {
                let Some(params) = parse::<DidCloseTextDocumentParams>(notification.params) else { return };
                if let Some(document) = self.documents.close(&params.text_document.uri) {
                    self.changed(document.config, DEBOUNCE);
                }
            }
            Cancel::METHOD => {
                let Some(params) = parse::<CancelParams>(notification.params) else { return };
                let id = match params.id {
                    NumberOrString::Number(number) => RequestId::from(number),
                    NumberOrString::String(text) => RequestId::from(text),
                };
                if let Some(index) = self.waiting.iter().position(|waiting| waiting.request.id == id) {
                    self.waiting.remove(index);
                    self.error(id, ErrorCode::RequestCanceled, "cancelled".to_owned());
                }
            }
            _ => {}
        }
    }

    fn on_request(&mut self, request: Request) {
        if self.shut_down {
            return self.error(request.id, ErrorCode::InvalidRequest, "the server is shutting down".to_owned());
        }
        match request.method.as_str() {
            Shutdown::METHOD => {
                self.shut_down = true;
                self.send(Response::new_ok(request.id, ()));
            }
            ExecuteCommand::METHOD => self.execute_command(request),
            Completion::METHOD
            | HoverRequest::METHOD
            | GotoDefinition::METHOD
            | References::METHOD
            | PrepareRenameRequest::METHOD
            | Rename::METHOD
            | CodeActionRequest::METHOD => self.route(request),
            _ => self.error(request.id, ErrorCode::MethodNotFound, format!("unknown method {}", request.method)),
        }
    }

    /// `cascade.copy`, for editors that do not copy its text themselves: the text is shown, and
    /// is the command's result.
    fn execute_command(&mut self, request: Request) {
        let params = serde_json::from_value::<ExecuteCommandParams>(request.params);
        match params {
            Ok(params) if params.command == actions::COPY => {
                let text = params.arguments.first().and_then(Value::as_str).unwrap_or_default().to_owned();
                self.show(MessageType::INFO, text.clone());
                self.send(Response::new_ok(request.id, text));
            }
            _ => self.error(request.id, ErrorCode::InvalidParams, "unknown command".to_owned()),
        }
    }

    /// Answers a request about a file now, or when its config's analysis has caught up.
    fn route(&mut self, request: Request) {
        let uri = request.params.pointer("/textDocument/uri").and_then(Value::as_str).and_then(|u| Url::parse(u).ok());
        let Some(path) = uri.as_ref().and_then(|uri| uri.to_file_path().ok()) else {
            return self.send(Response::new_ok(request.id, Value::Null));
        };
        let config = match uri.as_ref().and_then(|uri| self.documents.get(uri)) {
            Some(document) => document.config.clone(),
            None => self.config_of(&path),
        };
        let state = self.configs.entry(config.clone()).or_default();
        // Completion is asked for on every keystroke: any analysis has the names it offers.
        let generation = if request.method == Completion::METHOD { 0 } else { state.generation };
        match &state.analysis {
            Some(analysis) if analysis.generation >= generation => {
                let analysis = analysis.clone();
                self.answer(request, &analysis);
            }
            _ => {
                if !state.running {
                    state.due = Some(Instant::now());
                }
                self.waiting.push(Waiting { request, config, generation });
            }
        }
    }

    fn start_due(&mut self) {
        let now = Instant::now();
        for (dir, config) in &mut self.configs {
            if config.running || config.due.is_none_or(|due| due > now) {
                continue;
            }
            let (buffers, open) = self.documents.of_config(dir);
            let job = Job {
                dir: dir.clone(),
                generation: config.generation,
                buffers,
                open,
                refresh_schema: std::mem::take(&mut config.refresh_schema),
            };
            config.running = true;
            config.due = None;
            let _ = self.worker.jobs.send(job);
        }
    }

    fn on_outcome(&mut self, generation: u64, outcome: Outcome) {
        for message in &outcome.messages {
            self.show(MessageType::WARNING, message.clone());
        }
        let state = self.configs.entry(outcome.dir.clone()).or_default();
        state.running = false;
        let analysis = match outcome.analysis {
            Ok(analysis) => {
                state.error = None;
                Arc::new(analysis)
            }
            Err(error) => {
                let repeated = state.error.as_ref() == Some(&error);
                state.error = Some(error.clone());
                if !repeated {
                    self.show(MessageType::ERROR, error.clone());
                }
                self.fail_waiting(&outcome.dir, generation, &error);
                return;
            }
        };
        state.analysis = Some(analysis.clone());
        let before: HashSet<Url> = std::mem::take(&mut state.files).into_iter().collect();
        state.files = analysis.files.iter().map(|file| file.uri.clone()).collect();
        for (uri, version, list) in diagnostics::by_file(&analysis) {
            if self.published.get(&uri) != Some(&(version, list.clone())) {
                self.publish(uri.clone(), version, list.clone());
                self.published.insert(uri, (version, list));
            }
        }
        for gone in before.into_iter().filter(|uri| !analysis.files.iter().any(|file| &file.uri == uri)) {
            if self.published.remove(&gone).is_some() {
                self.publish(gone, None, Vec::new());
            }
        }
        let (ready, waiting): (Vec<Waiting>, Vec<Waiting>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|w| w.config == outcome.dir && w.generation <= analysis.generation);
        self.waiting = waiting;
        if self.waiting.iter().any(|w| w.config == outcome.dir) {
            // A request waits for changes made meanwhile: no more debounce.
            self.configs.entry(outcome.dir.clone()).or_default().due = Some(Instant::now());
        }
        for waiting in ready {
            self.answer(waiting.request, &analysis);
        }
    }

    fn fail_waiting(&mut self, config: &Path, generation: u64, error: &str) {
        let (failed, waiting): (Vec<Waiting>, Vec<Waiting>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|w| w.config == config && w.generation <= generation);
        self.waiting = waiting;
        for waiting in failed {
            self.error(waiting.request.id, ErrorCode::RequestFailed, error.to_owned());
        }
    }

    fn publish(&self, uri: Url, version: Option<i32>, diagnostics: Vec<lsp_types::Diagnostic>) {
        self.notify::<PublishDiagnostics>(PublishDiagnosticsParams { uri, diagnostics, version });
    }

    fn answer(&self, request: Request, analysis: &Analysis) {
        let id = request.id.clone();
        match catch_unwind(AssertUnwindSafe(|| self.result(request, analysis))) {
            Ok(Ok(result)) => self.send(Response::new_ok(id, result)),
            Ok(Err((code, message))) => self.error(id, code, message),
            Err(panic) => self.error(id, ErrorCode::InternalError, panic_message(panic.as_ref())),
        }
    }

    fn result(&self, request: Request, analysis: &Analysis) -> Result<Value, (ErrorCode, String)> {
        let at = |position: &TextDocumentPositionParams| {
            let file = analysis.file_of(&position.text_document.uri)?;
            Some((file, analysis.offset(file, position.position)))
        };
        match request.method.as_str() {
            Completion::METHOD => {
                let params: CompletionParams = params(request.params)?;
                let position = params.text_document_position;
                let items = match self.documents.get(&position.text_document.uri) {
                    Some(document) => {
                        let offset =
                            super::documents::Lines::new(&document.text).offset(&document.text, position.position);
                        completion::complete(analysis, &document.text, offset)
                    }
                    None => match at(&position) {
                        Some((file, offset)) => completion::complete(analysis, analysis.text(file), offset),
                        None => lsp_types::CompletionList::default(),
                    },
                };
                json(items)
            }
            HoverRequest::METHOD => {
                let params: HoverParams = params(request.params)?;
                json(
                    at(&params.text_document_position_params)
                        .and_then(|(file, offset)| hover::hover(analysis, file, offset)),
                )
            }
            GotoDefinition::METHOD => {
                let params: GotoDefinitionParams = params(request.params)?;
                json(
                    at(&params.text_document_position_params)
                        .map(|(file, offset)| navigation::definition(analysis, file, offset)),
                )
            }
            References::METHOD => {
                let params: ReferenceParams = params(request.params)?;
                let declarations = params.context.include_declaration;
                json(
                    at(&params.text_document_position)
                        .map(|(file, offset)| navigation::references(analysis, file, offset, declarations)),
                )
            }
            PrepareRenameRequest::METHOD => {
                let params: TextDocumentPositionParams = params(request.params)?;
                json(at(&params).and_then(|(file, offset)| navigation::prepare_rename(analysis, file, offset)))
            }
            Rename::METHOD => {
                let params: RenameParams = params(request.params)?;
                let Some((file, offset)) = at(&params.text_document_position) else { return Ok(Value::Null) };
                match navigation::rename(analysis, file, offset, &params.new_name) {
                    Ok(edit) => json(edit),
                    Err(refused) => Err((ErrorCode::RequestFailed, refused.0)),
                }
            }
            CodeActionRequest::METHOD => {
                let params: CodeActionParams = params(request.params)?;
                let Some(file) = analysis.file_of(&params.text_document.uri) else { return Ok(Value::Null) };
                let range = analysis.files[file].lines.span(analysis.text(file), params.range);
                json(actions::code_actions(analysis, file, range))
            }
            method => Err((ErrorCode::MethodNotFound, format!("unknown method {method}"))),
        }
    }
}

fn json(value: impl serde::Serialize) -> Result<Value, (ErrorCode, String)> {
    serde_json::to_value(value).map_err(|error| (ErrorCode::InternalError, error.to_string()))
}

fn params<P: DeserializeOwned>(value: Value) -> Result<P, (ErrorCode, String)> {
    serde_json::from_value(value).map_err(|error| (ErrorCode::InvalidParams, error.to_string()))
}

fn parse<P: DeserializeOwned>(value: Value) -> Option<P> {
    serde_json::from_value(value).ok()
}
