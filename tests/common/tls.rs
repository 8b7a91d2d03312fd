//! nginx serving https for tests: a CA, a server certificate for
//! localhost and 127.0.0.1, and (on request) a client certificate, all
//! generated here with rcgen; optionally nginx asks for a client
//! certificate that CA issued.

use std::path::PathBuf;

use loadlab::proc::nginx::{Nginx, NginxOptions};

use super::require_nginx;

/// nginx serving https with a certificate issued by a CA made here; the
/// CA's PEM file (and the client's, with `start_verifying_clients`) are
/// in the returned dir.
pub struct TlsNginx {
    pub nginx: Nginx,
    pub dir: tempfile::TempDir,
}

impl TlsNginx {
    pub fn start() -> TlsNginx {
        Self::start_with(false)
    }

    /// nginx that refuses requests without a client certificate from the
    /// CA (`ssl_verify_client on`); `client_pem()` holds one, chain and
    /// key in one file as ab's -E takes it.
    pub fn start_verifying_clients() -> TlsNginx {
        Self::start_with(true)
    }

    fn start_with(verify_clients: bool) -> TlsNginx {
        require_nginx();
        let dir = tempfile::tempdir().unwrap();
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .unwrap()
            .signed_by(&key, &ca_cert, &ca_key)
            .unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("ca.pem"), ca_cert.pem()).unwrap();
        std::fs::write(p("cert.pem"), leaf.pem()).unwrap();
        std::fs::write(p("key.pem"), key.serialize_pem()).unwrap();
        let client_key = rcgen::KeyPair::generate().unwrap();
        let mut client = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        client.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        // rcgen names every certificate alike by default; OpenSSL (nginx)
        // takes a client certificate named as its issuer for self-signed.
        client.distinguished_name = rcgen::DistinguishedName::new();
        client
            .distinguished_name
            .push(rcgen::DnType::CommonName, "loadlab test client");
        let client = client.signed_by(&client_key, &ca_cert, &ca_key).unwrap();
        let pem = format!("{}{}", client.pem(), client_key.serialize_pem());
        std::fs::write(p("client.pem"), pem).unwrap();
        let root = p("root");
        loadlab::server::handlers::write_embedded_docroot(&root).unwrap();
        let mut opts = NginxOptions::new(&root, loadlab::server::LISTEN_BACKLOG);
        opts.tls = Some((p("cert.pem"), p("key.pem")));
        if verify_clients {
            opts.client_ca = Some(p("ca.pem"));
        }
        let nginx = Nginx::start(&opts).expect("start nginx with TLS");
        TlsNginx { nginx, dir }
    }

    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// A client certificate from the CA and its key, in one PEM file.
    pub fn client_pem(&self) -> PathBuf {
        self.dir.path().join("client.pem")
    }

    /// The URL by name, so that SNI is sent (localhost is 127.0.0.1 here,
    /// where nginx listens).
    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.nginx.addr.port())
    }
}
