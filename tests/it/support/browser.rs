//! A headless Chromium for tests, driven with the DevTools protocol over `--remote-debugging-pipe`: it owns
//! the process (killed with its group on drop), the fd 3/4 pipes and a thread routing replies and events.
//!
//! ```ignore
//! let browser = support::browser::Browser::start(); // Browser::find() says first whether it can
//! let page = browser.new_page();
//! page.goto(&format!("http://127.0.0.1:{port}/"));
//! page.click("a.next"); // waits for the page it navigates to, if any
//! assert_eq!(page.text("h1"), "Next");
//! ```

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Map, Value, json};

/// The longest any single command or navigation may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The longest `Page::wait_for` polls.
const WAIT_FOR_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `Page::click` waits for a navigation to start before deciding the click did not navigate.
const CLICK_GRACE: Duration = Duration::from_millis(500);
/// Events kept for waiters; older ones are dropped.
const MAX_EVENTS: usize = 10_000;
const VIEWPORT_WIDTH: u64 = 1280;
const VIEWPORT_HEIGHT: u64 = 800;
const MAX_SCREENSHOT_HEIGHT: f64 = 16_384.0;

/// Flags as this machine's probe uses them: `--no-sandbox` because tests run as root, and no background
/// networking, which the closed network would refuse.
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
];

/// A headless Chromium process; dropping it kills Chromium and everything it started.
pub struct Browser {
    conn: Arc<Connection>,
    child: Child,
    /// Holds the profile (`--user-data-dir`) and Chromium's stderr log; removed on drop.
    _dir: tempfile::TempDir,
}

impl Browser {
    /// The Chromium binary to run: `$CHROMIUM` when set (and it exists), else `/usr/bin/chromium`, else
    /// `chromium` on `PATH`; `None` when there is none (Debian: `apt-get install -y chromium`).
    pub fn find() -> Option<PathBuf> {
        if let Some(path) = std::env::var_os("CHROMIUM").filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(path)).filter(|p| p.is_file());
        }
        let system = PathBuf::from("/usr/bin/chromium");
        if system.is_file() {
            return Some(system);
        }
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join("chromium"))
            .find(|p| p.is_file())
    }

    /// Starts a fresh headless Chromium with an empty profile; panics when it is missing or does not answer.
    /// Every later wait is bounded (30 s, `wait_for` 10 s) and panics naming the command, with the tail of
    /// Chromium's stderr. `CDP_TRACE=1` prints every protocol message to stderr.
    pub fn start() -> Browser {
        let binary = Self::find().unwrap_or_else(|| {
            panic!(
                "Browser::start: no Chromium found ($CHROMIUM, /usr/bin/chromium, PATH); \
                 install it with `apt-get install -y chromium`"
            )
        });
        let dir = tempfile::Builder::new()
            .prefix("chromium-test-")
            .tempdir()
            .expect("Browser::start: create a temporary directory for Chromium");
        let log_path = dir.path().join("chromium.log");
        let log = File::create(&log_path).expect("Browser::start: create Chromium's log file");
        let log_out = log
            .try_clone()
            .expect("Browser::start: duplicate the log file handle");

        // Chromium reads commands from fd 3 and writes replies to fd 4.
        let (commands_read, commands_write) = cloexec_pipe();
        let (replies_read, replies_write) = cloexec_pipe();
        let (child_in, child_out) = (commands_read.as_raw_fd(), replies_write.as_raw_fd());
        let mut command = Command::new(&binary);
        command
            .args(FLAGS)
            .arg(format!(
                "--user-data-dir={}",
                dir.path().join("profile").display()
            ))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(log_out)
            .stderr(log)
            .process_group(0);
        // SAFETY: the closure only calls async-signal-safe libc functions (fcntl, dup2, close).
        unsafe {
            command.pre_exec(move || install_pipe_fds(child_in, child_out));
        }
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("Browser::start: cannot run {}: {e}", binary.display()));
        // Our copies of Chromium's ends must go, or we would never see EOF when it exits.
        drop(commands_read);
        drop(replies_write);

        let conn = Arc::new(Connection {
            to_chromium: Mutex::new(File::from(commands_write)),
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            next_id: AtomicU64::new(1),
            log: log_path,
        });
        let reader_conn = Arc::clone(&conn);
        let from_chromium = File::from(replies_read);
        std::thread::Builder::new()
            .name("chromium-reader".into())
            .spawn(move || reader_conn.read_loop(from_chromium))
            .expect("Browser::start: spawn the thread reading from Chromium");

        // From here on, a panic drops `browser`, which kills Chromium.
        let browser = Browser {
            conn,
            child,
            _dir: dir,
        };
        browser.conn.call(None, "Browser.getVersion", json!({}));
        browser
    }

    /// Opens a new tab (`about:blank`, viewport 1280×800) and attaches to it. Tabs of one `Browser` share
    /// cookies; start another `Browser` for a clean profile.
    pub fn new_page(&self) -> Page {
        let target = self
            .conn
            .call(None, "Target.createTarget", json!({"url": "about:blank"}));
        let target_id = str_field(&target, "targetId", "Target.createTarget");
        let attached = self.conn.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        let session_id = str_field(&attached, "sessionId", "Target.attachToTarget");
        let page = Page {
            conn: Arc::clone(&self.conn),
            target_id,
            session_id,
            headers: Mutex::new(Map::new()),
        };
        page.call("Page.enable", json!({}));
        page.set_viewport(VIEWPORT_HEIGHT);
        page
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Chromium's helpers share its process group (`process_group(0)`), so this ends them all.
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: plain kill(2) on the group we created.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One tab, attached with a flat session: every command carries its `sessionId`.
pub struct Page {
    conn: Arc<Connection>,
    target_id: String,
    session_id: String,
    headers: Mutex<Map<String, Value>>,
}

impl Page {
    /// Navigates and waits for the new document's load event (after any redirects); panics on a network
    /// error, not on an HTTP error status.
    pub fn goto(&self, url: &str) {
        let what = format!("goto({url:?})");
        let mark = self.conn.mark();
        let reply = self.call("Page.navigate", json!({"url": url}));
        if let Some(error) = reply["errorText"].as_str().filter(|e| !e.is_empty()) {
            panic!("{what}: navigation failed: {error}");
        }
        // No loaderId: a same-document navigation (only the fragment changed), which has no load event;
        // a download has none either.
        if let Some(loader) = reply["loaderId"].as_str()
            && reply["isDownload"] != Value::Bool(true)
        {
            let (navigated, _) = self.wait_event(mark, Instant::now() + TIMEOUT, &what, |e| {
                self.is_main_frame_navigated(e) && e["params"]["frame"]["loaderId"] == loader
            });
            self.wait_load(navigated, &what);
        }
    }

    /// Evaluates the expression `js` (awaiting a promise) and returns its value as JSON (`Null` for
    /// `undefined`); panics with the exception on a JS error.
    pub fn eval(&self, js: &str) -> Value {
        self.try_eval(js)
            .unwrap_or_else(|e| panic!("eval failed: {e}\nscript: {js}"))
    }

    /// The `innerText` of the first element matching `selector`; panics when none does.
    pub fn text(&self, selector: &str) -> String {
        let value = self.eval(&format!(
            "(() => {{ const e = document.querySelector({}); return e ? e.innerText : null; }})()",
            js_string(selector)
        ));
        match value {
            Value::String(text) => text,
            _ => self.no_match("text", selector),
        }
    }

    /// How many elements match `selector`.
    pub fn count(&self, selector: &str) -> usize {
        let value = self.eval(&format!(
            "document.querySelectorAll({}).length",
            js_string(selector)
        ));
        value
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or_else(|| panic!("count({selector:?}): unexpected result {value}"))
    }

    /// Attribute `name` of the first element matching `selector` (`None` when absent); panics when no
    /// element matches.
    pub fn attr(&self, selector: &str, name: &str) -> Option<String> {
        let value = self.eval(&format!(
            "(() => {{ const e = document.querySelector({}); return e ? [e.getAttribute({})] : null; }})()",
            js_string(selector),
            js_string(name)
        ));
        match value {
            Value::Array(mut found) => match found.pop() {
                Some(Value::String(attr)) => Some(attr),
                _ => None,
            },
            _ => self.no_match(&format!("attr(.., {name:?})"), selector),
        }
    }

    /// Clicks the first element matching `selector` (`element.click()`). When that starts a navigation in
    /// this tab (a link, a submit button, a script within 0.5 s), waits for the new page's load event; a
    /// click that does not navigate costs those 0.5 s.
    pub fn click(&self, selector: &str) {
        let what = format!("click({selector:?})");
        let mark = self.conn.mark();
        let clicked = self.eval(&format!(
            "(() => {{ const e = document.querySelector({}); if (!e) return false; e.click(); return true; }})()",
            js_string(selector)
        ));
        if clicked != Value::Bool(true) {
            self.no_match("click", selector);
        }
        // A link or submit button requests its navigation during the click (the event precedes the reply);
        // the grace period catches scripts that navigate a moment later.
        let started = self.find_event(mark, Instant::now() + CLICK_GRACE, |e| {
            let same_tab = e["params"]["disposition"]
                .as_str()
                .is_none_or(|d| d == "currentTab");
            self.is_main_frame_navigated(e)
                || (self.is_main_frame_event(e)
                    && same_tab
                    && matches!(
                        method(e),
                        "Page.frameRequestedNavigation"
                            | "Page.frameStartedLoading"
                            | "Page.navigatedWithinDocument"
                    ))
        });
        let Some((started, event)) = started else {
            return; // no navigation: the click only ran scripts
        };
        if method(&event) == "Page.navigatedWithinDocument" {
            return;
        }
        // Either the navigation commits a new document, or it ends without one: a fragment change, or it
        // stops (cancelled, a 204 answer, a download).
        let (seq, event) = self.wait_event(started - 1, Instant::now() + TIMEOUT, &what, |e| {
            self.is_main_frame_navigated(e)
                || (self.is_main_frame_event(e)
                    && matches!(
                        method(e),
                        "Page.frameStoppedLoading" | "Page.navigatedWithinDocument"
                    ))
        });
        if method(&event) == "Page.frameNavigated" {
            self.wait_load(seq, &what);
        }
    }

    /// Sets the value of the first input/textarea/select matching `selector`, then dispatches `input` and
    /// `change` (bubbling).
    pub fn fill(&self, selector: &str, value: &str) {
        let filled = self.eval(&format!(
            "(() => {{
                const e = document.querySelector({});
                if (!e) return false;
                e.focus();
                const setter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(e), 'value')?.set;
                if (setter) setter.call(e, {value}); else e.value = {value};
                e.dispatchEvent(new Event('input', {{ bubbles: true }}));
                e.dispatchEvent(new Event('change', {{ bubbles: true }}));
                return true;
            }})()",
            js_string(selector),
            value = js_string(value)
        ));
        if filled != Value::Bool(true) {
            self.no_match("fill", selector);
        }
    }

    /// Polls until an element matches `selector`, at most 10 s.
    pub fn wait_for(&self, selector: &str) {
        let js = format!("document.querySelector({}) !== null", js_string(selector));
        let deadline = Instant::now() + WAIT_FOR_TIMEOUT;
        loop {
            // Errors are expected while a navigation replaces the document: retry them.
            let last = match self.try_eval(&js) {
                Ok(Value::Bool(true)) => return,
                Ok(_) => String::from("not present"),
                Err(e) if e.contains("is not a valid selector") => {
                    panic!("wait_for({selector:?}): {e}")
                }
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                let url = self.url_for_panic();
                panic!(
                    "wait_for({selector:?}): no match after {} s on {url} (last: {last}){}",
                    WAIT_FOR_TIMEOUT.as_secs(),
                    self.conn.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The current document's URL.
    pub fn url(&self) -> String {
        as_string(self.eval("location.href"), "url()")
    }

    /// The current document's markup (`document.documentElement.outerHTML`).
    pub fn html(&self) -> String {
        as_string(self.eval("document.documentElement.outerHTML"), "html()")
    }

    /// Writes a PNG of the whole page, 1280 CSS pixels wide and as tall as the content (capped at 16384).
    pub fn screenshot(&self, path: &Path) {
        let metrics = self.call("Page.getLayoutMetrics", json!({}));
        let height = metrics["cssContentSize"]["height"]
            .as_f64()
            .unwrap_or(VIEWPORT_HEIGHT as f64)
            .ceil()
            .clamp(1.0, MAX_SCREENSHOT_HEIGHT) as u64;
        self.set_viewport(height);
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        self.set_viewport(VIEWPORT_HEIGHT);
        let data = str_field(&shot, "data", "Page.captureScreenshot");
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap_or_else(|e| panic!("screenshot: Chromium sent invalid base64: {e}"));
        std::fs::write(path, png)
            .unwrap_or_else(|e| panic!("screenshot: cannot write {}: {e}", path.display()));
    }

    /// Adds a header to every later request of this page (e.g. `Authorization: Bearer ...`).
    pub fn set_header(&self, name: &str, value: &str) {
        let headers = {
            let mut headers = self.headers.lock().unwrap_or_else(|e| e.into_inner());
            headers.insert(name.to_owned(), Value::String(value.to_owned()));
            headers.clone()
        };
        self.call("Network.enable", json!({}));
        self.call("Network.setExtraHTTPHeaders", json!({"headers": headers}));
    }

    fn call(&self, method: &str, params: Value) -> Value {
        self.conn.call(Some(&self.session_id), method, params)
    }

    /// Like `eval`, but a protocol error or JS exception is returned instead of panicking.
    fn try_eval(&self, js: &str) -> Result<Value, String> {
        let params = json!({"expression": js, "returnByValue": true, "awaitPromise": true});
        let reply = self
            .conn
            .try_call(Some(&self.session_id), "Runtime.evaluate", params)?;
        if let Some(details) = reply.get("exceptionDetails") {
            let description = details["exception"]["description"].as_str();
            let text = description
                .or(details["text"].as_str())
                .unwrap_or("JS exception");
            return Err(text.to_owned());
        }
        Ok(reply["result"].get("value").cloned().unwrap_or(Value::Null))
    }

    fn set_viewport(&self, height: u64) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": VIEWPORT_WIDTH, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
    }

    /// Waits for the load event of the document committed by the `Page.frameNavigated` numbered `navigated`.
    fn wait_load(&self, navigated: u64, what: &str) {
        self.wait_event(navigated, Instant::now() + TIMEOUT, what, |e| {
            method(e) == "Page.loadEventFired"
        });
    }

    fn is_main_frame_navigated(&self, event: &Value) -> bool {
        let frame = &event["params"]["frame"];
        method(event) == "Page.frameNavigated"
            && frame.get("parentId").is_none()
            && frame["id"].as_str() == Some(&self.target_id)
    }

    /// Whether the event's `frameId` is this page's main frame (whose id is the target's).
    fn is_main_frame_event(&self, event: &Value) -> bool {
        event["params"]["frameId"].as_str() == Some(&self.target_id)
    }

    /// The current URL for a panic message, or why it is unknown.
    fn url_for_panic(&self) -> String {
        match self.try_eval("location.href") {
            Ok(Value::String(url)) => url,
            Ok(other) => other.to_string(),
            Err(e) => format!("<unknown: {e}>"),
        }
    }

    /// The first event of this page after sequence number `after` that matches, or `None` at `deadline`.
    fn find_event(
        &self,
        after: u64,
        deadline: Instant,
        mut matches: impl FnMut(&Value) -> bool,
    ) -> Option<(u64, Value)> {
        let session = Value::String(self.session_id.clone());
        self.conn.find_event(after, deadline, |e| {
            e.get("sessionId") == Some(&session) && matches(e)
        })
    }

    /// Like `find_event`, but panics naming `what` at the deadline.
    fn wait_event(
        &self,
        after: u64,
        deadline: Instant,
        what: &str,
        matches: impl FnMut(&Value) -> bool,
    ) -> (u64, Value) {
        self.find_event(after, deadline, matches)
            .unwrap_or_else(|| {
                let url = self.url_for_panic();
                panic!(
                    "{what}: the page did not finish loading within {} s (now at {url}){}",
                    TIMEOUT.as_secs(),
                    self.conn.log_tail()
                )
            })
    }

    fn no_match(&self, what: &str, selector: &str) -> ! {
        let url = self.url_for_panic();
        panic!("{what}: no element matches {selector:?} on {url}")
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        self.conn.send_detached(
            None,
            "Target.closeTarget",
            json!({"targetId": self.target_id}),
        );
    }
}

/// The pipe pair to Chromium and what its reader thread has received.
struct Connection {
    to_chromium: Mutex<File>,
    state: Mutex<State>,
    changed: Condvar,
    next_id: AtomicU64,
    log: PathBuf,
}

#[derive(Default)]
struct State {
    /// Replies by command id, until their caller takes them.
    replies: HashMap<u64, Value>,
    /// Ids whose reply nobody waits for (fire-and-forget commands, timed-out calls).
    discard: HashSet<u64>,
    /// Recent events, each with a sequence number so waiters can ask for those after a point.
    events: VecDeque<(u64, Value)>,
    next_seq: u64,
    /// Why the pipe closed, once it has.
    closed: Option<String>,
}

impl Connection {
    /// Sends a command and waits for its result; panics naming the command on an error or after 30 s.
    fn call(&self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.try_call(session, method, params)
            .unwrap_or_else(|e| panic!("Chromium command {method} failed: {e}{}", self.log_tail()))
    }

    /// Like `call`, but returns a protocol error (as its message) instead of panicking; still panics on a
    /// timeout or when Chromium is gone, which no caller can recover from.
    fn try_call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let id = self.send(session, method, params).unwrap_or_else(|e| {
            panic!(
                "Chromium command {method}: cannot write to Chromium: {e}{}",
                self.log_tail()
            )
        });
        let deadline = Instant::now() + TIMEOUT;
        let mut state = self.lock();
        let reply = loop {
            if let Some(reply) = state.replies.remove(&id) {
                break reply;
            }
            if let Some(reason) = &state.closed {
                let reason = reason.clone();
                drop(state);
                panic!("Chromium command {method}: {reason}{}", self.log_tail());
            }
            let now = Instant::now();
            if now >= deadline {
                state.discard.insert(id);
                drop(state);
                panic!(
                    "Chromium command {method}: no answer within {} s{}",
                    TIMEOUT.as_secs(),
                    self.log_tail()
                );
            }
            state = self.wait(state, deadline - now);
        };
        drop(state);
        match reply.get("error") {
            Some(error) => Err(error["message"]
                .as_str()
                .map_or_else(|| error.to_string(), str::to_owned)),
            None => Ok(reply.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    /// Sends a command whose reply is not wanted; errors are ignored (used on drop and for dialogs).
    fn send_detached(&self, session: Option<&str>, method: &str, params: Value) {
        if let Ok(id) = self.send(session, method, params) {
            let mut state = self.lock();
            if state.replies.remove(&id).is_none() {
                state.discard.insert(id);
            }
        }
    }

    fn send(&self, session: Option<&str>, method: &str, params: Value) -> io::Result<u64> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = Value::String(session.to_owned());
        }
        trace("->", &message);
        let mut bytes = serde_json::to_vec(&message).map_err(io::Error::other)?;
        bytes.push(0);
        let mut pipe = self.to_chromium.lock().unwrap_or_else(|e| e.into_inner());
        pipe.write_all(&bytes)?;
        Ok(id)
    }

    /// The sequence number of the latest event so far: waiters look at events after it.
    fn mark(&self) -> u64 {
        self.lock().next_seq
    }

    /// The first event numbered above `after` that matches, or `None` at `deadline`; panics if Chromium is gone.
    fn find_event(
        &self,
        after: u64,
        deadline: Instant,
        mut matches: impl FnMut(&Value) -> bool,
    ) -> Option<(u64, Value)> {
        let mut checked = after;
        let mut state = self.lock();
        loop {
            // Sequence numbers are consecutive, so the events after `checked` start at a known index.
            let first = state.events.front().map_or(0, |(seq, _)| *seq);
            let skip = usize::try_from((checked + 1).saturating_sub(first)).unwrap_or(usize::MAX);
            let found = state
                .events
                .iter()
                .skip(skip)
                .find(|(_, event)| matches(event));
            if let Some((seq, event)) = found {
                return Some((*seq, event.clone()));
            }
            checked = checked.max(state.next_seq);
            if let Some(reason) = &state.closed {
                let reason = reason.clone();
                drop(state);
                panic!("waiting for a page event: {reason}{}", self.log_tail());
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            state = self.wait(state, deadline - now);
        }
    }

    fn read_loop(&self, from_chromium: File) {
        let mut reader = BufReader::new(from_chromium);
        let mut buffer = Vec::new();
        let reason = loop {
            buffer.clear();
            match reader.read_until(0, &mut buffer) {
                Ok(0) => break String::from("Chromium exited (its pipe closed)"),
                Ok(_) => {
                    if buffer.last() == Some(&0) {
                        buffer.pop();
                    }
                    match serde_json::from_slice::<Value>(&buffer) {
                        Ok(message) => self.dispatch(message),
                        Err(e) => {
                            eprintln!("browser.rs: ignoring a malformed message from Chromium: {e}")
                        }
                    }
                }
                Err(e) => break format!("reading from Chromium failed: {e}"),
            }
        };
        self.lock().closed = Some(reason);
        self.changed.notify_all();
    }

    fn dispatch(&self, message: Value) {
        trace("<-", &message);
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            let mut state = self.lock();
            if !state.discard.remove(&id) {
                state.replies.insert(id, message);
            }
        } else if message.get("method").is_some() {
            if method(&message) == "Page.javascriptDialogOpening" {
                // An open alert/confirm would block every later command: accept it and say so.
                eprintln!(
                    "browser.rs: accepting a JS dialog: {}",
                    message["params"]["message"]
                );
                let session = message["sessionId"].as_str();
                self.send_detached(
                    session,
                    "Page.handleJavaScriptDialog",
                    json!({"accept": true}),
                );
            }
            let mut state = self.lock();
            state.next_seq += 1;
            let seq = state.next_seq;
            state.events.push_back((seq, message));
            if state.events.len() > MAX_EVENTS {
                state.events.pop_front();
            }
        } else {
            return;
        }
        self.changed.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, state: MutexGuard<'a, State>, timeout: Duration) -> MutexGuard<'a, State> {
        match self.changed.wait_timeout(state, timeout) {
            Ok((state, _)) => state,
            Err(e) => e.into_inner().0,
        }
    }

    /// The last lines of Chromium's stdout/stderr, for panic messages.
    fn log_tail(&self) -> String {
        const TAIL_BYTES: u64 = 8192;
        let Ok(mut file) = File::open(&self.log) else {
            return String::new();
        };
        let start = file
            .metadata()
            .map_or(0, |m| m.len().saturating_sub(TAIL_BYTES));
        let mut bytes = Vec::new();
        if file.seek(SeekFrom::Start(start)).is_err() || file.read_to_end(&mut bytes).is_err() {
            return String::new();
        }
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text
            .lines()
            .skip(usize::from(start > 0)) // the first line read is likely cut
            // Chromium complains about the missing D-Bus at every start: leave those lines out.
            .filter(|line| !line.contains(":ERROR:dbus/") && !line.trim().is_empty())
            .collect();
        if lines.is_empty() {
            return String::new();
        }
        let tail = lines[lines.len().saturating_sub(15)..].join("\n  ");
        format!("\nChromium's stderr ends with:\n  {tail}")
    }
}

/// A pipe whose ends are closed on exec, so other processes spawned meanwhile do not inherit them.
fn cloexec_pipe() -> (OwnedFd, OwnedFd) {
    let mut fds: [RawFd; 2] = [-1; 2];
    // SAFETY: pipe2 writes two descriptors into the array, which we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        panic!(
            "Browser::start: pipe2 failed: {}",
            io::Error::last_os_error()
        );
    }
    // SAFETY: both descriptors are fresh and owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// In the forked child: make `commands` fd 3 and `replies` fd 4, both kept across exec.
/// They are first copied above 10, so neither `dup2` can overwrite the other's source or be a no-op
/// (`dup2(fd, fd)` would leave close-on-exec set); the copies from `F_DUPFD` are then closed.
fn install_pipe_fds(commands: RawFd, replies: RawFd) -> io::Result<()> {
    let check = |result: libc::c_int| {
        if result < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(result)
        }
    };
    // SAFETY: async-signal-safe calls on descriptors valid in the child.
    unsafe {
        let commands_high = check(libc::fcntl(commands, libc::F_DUPFD, 10))?;
        let replies_high = check(libc::fcntl(replies, libc::F_DUPFD, 10))?;
        check(libc::dup2(commands_high, 3))?;
        check(libc::dup2(replies_high, 4))?;
        libc::close(commands_high);
        libc::close(replies_high);
    }
    Ok(())
}

/// Prints a protocol message when `CDP_TRACE` is set (shortened: screenshots are large).
fn trace(direction: &str, message: &Value) {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    if *ENABLED
        .get_or_init(|| std::env::var_os("CDP_TRACE").is_some_and(|v| !v.is_empty() && v != "0"))
    {
        let text = message.to_string();
        let end = text.char_indices().nth(400).map_or(text.len(), |(i, _)| i);
        eprintln!("cdp {direction} {}", &text[..end]);
    }
}

fn method(event: &Value) -> &str {
    event["method"].as_str().unwrap_or("")
}

/// `text` as a JavaScript string literal (JSON strings are valid JS).
fn js_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

fn str_field(reply: &Value, field: &str, method: &str) -> String {
    reply[field]
        .as_str()
        .unwrap_or_else(|| panic!("Chromium command {method}: no {field} in its reply {reply}"))
        .to_owned()
}

fn as_string(value: Value, what: &str) -> String {
    match value {
        Value::String(text) => text,
        other => panic!("{what}: expected a string, got {other}"),
    }
}
