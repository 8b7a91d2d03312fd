//! nginx as a reference server: started from the system binary with a
//! generated config in a temp dir, on a free loopback port, stopped on drop.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::child::ChildServer;
use super::ports::{free_port, wait_accepting, NotAccepting};

/// What to tell the user when nginx is missing.
pub const INSTALL_HINT: &str =
    "nginx is not installed; install it with `apt-get install nginx` to compare against it";

/// Names the nginx binary to use instead of searching for one; a path
/// that is not a file means "nginx is not installed" (tests use this to
/// take the path a machine without nginx takes).
pub const NGINX_ENV: &str = "LOADLAB_NGINX";

/// How long nginx gets to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// The nginx binary, if installed (Debian puts it in /usr/sbin), or the
/// one `LOADLAB_NGINX` names.
pub fn find_nginx() -> Option<PathBuf> {
    let fallbacks = [
        "/usr/sbin/nginx",
        "/usr/local/sbin/nginx",
        "/usr/local/nginx/sbin/nginx",
    ];
    super::which::find_program(NGINX_ENV, "nginx", &fallbacks)
}

#[derive(Debug, Clone)]
pub struct NginxOptions {
    pub workers: usize,
    pub docroot: PathBuf,
    /// Log each request here (format: `$connection $connection_requests
    /// $status $request_method $body_bytes_sent $request_length`, the last
    /// being what nginx had received of the request when it logged it);
    /// None turns logging off.
    pub access_log: Option<PathBuf>,
    /// Pin the workers to these CPUs (worker_cpu_affinity).
    pub cpus: Option<Vec<usize>>,
    /// Largest request body accepted (client_max_body_size).
    pub max_body: String,
    /// Restrict the whole nginx process tree to the first N CPUs.
    pub affinity: Option<usize>,
    /// The listen backlog. A comparison passes the one loadlab's models
    /// use, so that it measures the servers, not the kernel options
    /// (nginx's default of 511 would make E3's 10,000 simultaneous
    /// connects a test of SYN retransmits).
    pub backlog: i32,
    /// Serve https with this PEM certificate chain and key (TLS 1.2 and
    /// 1.3) instead of plain http.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// With `tls`: ask every client for a certificate and accept only
    /// those this PEM CA issued (ssl_verify_client on).
    pub client_ca: Option<PathBuf>,
}

impl NginxOptions {
    /// One worker, no logging, `backlog` as the listen backlog.
    pub fn new(docroot: impl Into<PathBuf>, backlog: i32) -> Self {
        NginxOptions {
            workers: 1,
            docroot: docroot.into(),
            access_log: None,
            cpus: None,
            max_body: "1g".into(),
            affinity: None,
            backlog,
            tls: None,
            client_ca: None,
        }
    }
}

/// A running nginx master process.
#[derive(Debug)]
pub struct Nginx {
    server: ChildServer,
    pub addr: SocketAddr,
    dir: tempfile::TempDir,
    /// `http`, or `https` when started with a certificate.
    scheme: &'static str,
}

impl Nginx {
    pub fn start(opts: &NginxOptions) -> anyhow::Result<Nginx> {
        let bin = find_nginx().ok_or_else(|| anyhow::anyhow!(INSTALL_HINT))?;
        Self::start_until(&bin, opts, &|| false)
    }

    /// Starts `bin`; `stop` (Ctrl-C) ends the wait for it to accept.
    pub fn start_until(
        bin: &Path,
        opts: &NginxOptions,
        stop: &dyn Fn() -> bool,
    ) -> anyhow::Result<Nginx> {
        let mut last_err = None;
        // The free port may be taken between probing and nginx binding it.
        for _ in 0..5 {
            if stop() {
                anyhow::bail!("interrupted while nginx was starting");
            }
            match Self::try_start(bin, opts, stop) {
                Ok(n) => return Ok(n),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or_else(|| anyhow::anyhow!("nginx did not start")))
    }

    fn try_start(
        bin: &Path,
        opts: &NginxOptions,
        stop: &dyn Fn() -> bool,
    ) -> anyhow::Result<Nginx> {
        let dir = tempfile::Builder::new()
            .prefix("loadlab-nginx-")
            .tempdir()?;
        let port = free_port()?;
        let conf = config(opts, dir.path(), port);
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf)?;
        let mut cmd = Command::new(bin);
        cmd.arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf_path)
            .arg("-e")
            .arg(dir.path().join("error.log"));
        // SIGTERM is nginx's fast shutdown; the master reaps its workers,
        // and anything left after the grace is killed with the group.
        let server = ChildServer::spawn(cmd, opts.affinity, Stdio::null(), STOP_GRACE)?;
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let scheme = if opts.tls.is_some() { "https" } else { "http" };
        let mut n = Nginx {
            server,
            addr,
            dir,
            scheme,
        };
        if let Err(why) = wait_accepting(addr, Duration::from_secs(5), &mut n.server, stop) {
            if matches!(why, NotAccepting::Stopped) {
                anyhow::bail!("interrupted while nginx was starting");
            }
            let log = std::fs::read_to_string(n.dir.path().join("error.log")).unwrap_or_default();
            anyhow::bail!(
                "nginx did not start on {addr}: {}",
                log.lines().last().unwrap_or("no error log")
            );
        }
        Ok(n)
    }

    /// The master's pid; the workers are its children.
    pub fn pid(&self) -> u32 {
        self.server.pid()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}://{}{}", self.scheme, self.addr, path)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// The generated config: tuned as a performance comparison would tune
/// nginx (sendfile, open_file_cache, keep-alive without a request cap),
/// with every path inside the temp dir so no system state is touched.
fn config(opts: &NginxOptions, dir: &Path, port: u16) -> String {
    let d = dir.display();
    let mut c = String::new();
    // Workers would switch to `nobody`, which cannot read a private temp
    // docroot; the comparison runs on loopback only.
    let _ = writeln!(c, "user root root;\ndaemon off;\nmaster_process on;");
    let _ = writeln!(c, "worker_processes {};", opts.workers.max(1));
    if let Some(cpus) = &opts.cpus {
        let masks: Vec<String> = (0..opts.workers.max(1))
            .map(|w| {
                let cpu = cpus[w % cpus.len()];
                let mut m = vec!['0'; cpu + 1];
                m[0] = '1';
                m.iter().collect()
            })
            .collect();
        let _ = writeln!(c, "worker_cpu_affinity {};", masks.join(" "));
    }
    let _ = writeln!(
        c,
        "worker_rlimit_nofile 20000;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;"
    );
    let _ = writeln!(
        c,
        "events {{ worker_connections 20000; use epoll; multi_accept on; }}"
    );
    let _ = writeln!(c, "http {{");
    match &opts.access_log {
        Some(p) => {
            let _ = writeln!(
                c,
                "  log_format ll '$connection $connection_requests $status $request_method $body_bytes_sent $request_length';\n  access_log {} ll;",
                p.display()
            );
        }
        None => {
            let _ = writeln!(c, "  access_log off;");
        }
    }
    let _ = writeln!(
        c,
        "  sendfile on; tcp_nopush on; tcp_nodelay on;\n  keepalive_timeout 65; keepalive_requests 1000000000;\n  open_file_cache max=1000 inactive=20s;\n  client_max_body_size {};",
        opts.max_body
    );
    for t in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"] {
        let _ = writeln!(c, "  {t}_temp_path {d}/{t}_temp;");
    }
    let _ = writeln!(c, "  types {{ text/html html htm; text/plain txt; application/json json; }}\n  default_type application/octet-stream;");
    // The listening socket set up as loadlab's models set up theirs, so
    // that a comparison measures the servers, not the kernel options: the
    // caller's backlog (capped by net.core.somaxconn for both) and
    // TCP_DEFER_ACCEPT (`deferred`).
    let client_ca = match &opts.client_ca {
        Some(ca) => format!(
            " ssl_client_certificate {}; ssl_verify_client on;",
            ca.display()
        ),
        None => String::new(),
    };
    let tls = match &opts.tls {
        Some((cert, key)) => format!(
            " ssl; ssl_protocols TLSv1.2 TLSv1.3; ssl_certificate {}; ssl_certificate_key {};{client_ca}",
            cert.display(),
            key.display()
        ),
        None => ";".into(),
    };
    let _ = writeln!(
        c,
        "  server {{ listen 127.0.0.1:{port} backlog={} deferred{tls} server_name _; root {}; location / {{ }} }}\n}}",
        opts.backlog,
        opts.docroot.display()
    );
    c
}
