//! TLS for the load generator: what the user asked for (`TlsOptions`:
//! roots, verification, SNI, protocol and cipher suites, in ab's terms)
//! turned once into a rustls client configuration (`TlsClient`) that
//! every connection of a run shares, and the report's description of the
//! session a server negotiated (`TlsSession`, ab's three lines).

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{ring, CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use rustls::{SupportedCipherSuite, SupportedProtocolVersion};

/// The protocol versions `-f` may ask for (ab's spelling). ab's SSL2,
/// SSL3, TLS1 and TLS1.1 are refused: rustls implements neither, and
/// they are deprecated (RFC 8996).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// TLS 1.2 or 1.3, whichever the server prefers (ab's ALL).
    #[default]
    All,
    Tls12,
    Tls13,
}

/// `-f TLS1.2`'s and `-f TLS1.3`'s version lists.
static TLS12_ONLY: &[&SupportedProtocolVersion] = &[&rustls::version::TLS12];
static TLS13_ONLY: &[&SupportedProtocolVersion] = &[&rustls::version::TLS13];

impl Protocol {
    /// Parses ab's `-f` value; the error is one line naming the value.
    pub fn parse(s: &str) -> Result<Protocol, String> {
        match s.to_ascii_uppercase().as_str() {
            "ALL" => Ok(Protocol::All),
            "TLS1.2" => Ok(Protocol::Tls12),
            "TLS1.3" => Ok(Protocol::Tls13),
            "SSL2" | "SSL3" | "TLS1" | "TLS1.0" | "TLS1.1" => Err(format!(
                "loadlab's TLS (rustls) speaks only TLS1.2, TLS1.3 or ALL; \
                 {s} is obsolete (RFC 8996)"
            )),
            _ => Err("expected TLS1.2, TLS1.3 or ALL".into()),
        }
    }

    fn versions(self) -> &'static [&'static SupportedProtocolVersion] {
        match self {
            Protocol::All => rustls::ALL_VERSIONS,
            Protocol::Tls12 => TLS12_ONLY,
            Protocol::Tls13 => TLS13_ONLY,
        }
    }
}

/// What the user asked of TLS; the defaults verify against the system's
/// roots (or SSL_CERT_FILE) and send SNI, as ab does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Trust these PEM certificates instead of the system's roots.
    pub cacert: Option<PathBuf>,
    /// Skip certificate verification (signatures are still checked).
    pub insecure: bool,
    /// Leave the server name out of the handshake (ab's -I).
    pub no_sni: bool,
    pub protocol: Protocol,
    /// `-Z`: colon-separated suites, IANA or OpenSSL names.
    pub ciphers: Option<String>,
    /// `-E`: a PEM file with the client's certificate chain and its
    /// private key, offered when the server asks for one.
    pub client_cert: Option<PathBuf>,
}

/// One run's TLS client: the shared configuration and the name every
/// connection asks for and verifies.
#[derive(Debug, Clone)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    /// The name sent in SNI, for the report (None with -I or an IP).
    pub sni: Option<String>,
}

impl TlsClient {
    /// Builds the configuration for `host` (as in the URL; an IPv6
    /// address may keep its brackets). Errors are one line.
    pub fn new(host: &str, opts: &TlsOptions) -> Result<TlsClient, String> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(bare.to_string())
            .map_err(|_| format!("'{host}' is not a valid TLS server name"))?;
        let mut provider = ring::default_provider();
        if let Some(list) = &opts.ciphers {
            provider.cipher_suites = pick_suites(list, opts.protocol)?;
        }
        let provider = Arc::new(provider);
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(opts.protocol.versions())
            .map_err(|e| format!("TLS: {e}"))?;
        let builder = if opts.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
        } else {
            builder.with_root_certificates(roots(opts)?)
        };
        let mut config = match &opts.client_cert {
            None => builder.with_no_client_auth(),
            Some(p) => {
                let (chain, key) = client_identity(p)?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("-E {}: {e}", p.display()))?
            }
        };
        config.enable_sni = !opts.no_sni;
        // A fresh full handshake on every connection, as ab makes (it
        // never offers a saved session): without -k the handshake is part
        // of what each request costs, and resuming would hide it.
        config.resumption = Resumption::disabled();
        let sni = match &name {
            ServerName::DnsName(d) if !opts.no_sni => Some(d.as_ref().to_string()),
            _ => None,
        };
        Ok(TlsClient {
            config: Arc::new(config),
            name,
            sni,
        })
    }

    /// A client session for one new connection.
    pub fn connect(&self) -> Result<ClientConnection, rustls::Error> {
        ClientConnection::new(self.config.clone(), self.name.clone())
    }
}

/// The trust anchors: `--cacert`'s file, else the system store (which
/// honours SSL_CERT_FILE and SSL_CERT_DIR).
fn roots(opts: &TlsOptions) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    let certs: Vec<CertificateDer<'static>> = match &opts.cacert {
        Some(p) => CertificateDer::pem_file_iter(p)
            .and_then(|it| it.collect::<Result<_, _>>())
            .map_err(|e| format!("--cacert {}: {e}", p.display()))?,
        None => {
            let found = rustls_native_certs::load_native_certs();
            if found.certs.is_empty() {
                let why = found.errors.first().map(|e| format!(": {e}"));
                return Err(format!(
                    "no trusted root certificates found in the system store{}; \
                     give --cacert FILE or --insecure",
                    why.unwrap_or_default()
                ));
            }
            found.certs
        }
    };
    let what = opts
        .cacert
        .as_ref()
        .map_or("the system store".to_string(), |p| p.display().to_string());
    let (added, _ignored) = store.add_parsable_certificates(certs);
    if added == 0 {
        return Err(format!("no usable certificate in {what}"));
    }
    Ok(store)
}

/// `-E`'s file: the certificate chain (leaf first) and the private key,
/// all PEM in one file as ab takes it.
fn client_identity(
    path: &std::path::Path,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let what = |e: &dyn std::fmt::Display| format!("-E {}: {e}", path.display());
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<_, _>>())
        .map_err(|e| what(&e))?;
    if chain.is_empty() {
        return Err(what(&"no certificate in the file"));
    }
    let key = PrivateKeyDer::from_pem_file(path).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => what(&"no private key in the file"),
        e => what(&e),
    })?;
    Ok((chain, key))
}

/// OpenSSL's names for the suites rustls has, so that an ab `-Z` line
/// works unchanged; rustls's own (IANA) names are accepted too.
const OPENSSL_NAMES: [(&str, &str); 9] = [
    ("TLS_AES_256_GCM_SHA384", "TLS13_AES_256_GCM_SHA384"),
    ("TLS_AES_128_GCM_SHA256", "TLS13_AES_128_GCM_SHA256"),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS13_CHACHA20_POLY1305_SHA256",
    ),
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
];

/// The IANA name rustls gives a suite.
pub fn suite_name(s: SupportedCipherSuite) -> String {
    format!("{:?}", s.suite())
}

/// `-Z`'s suites, in the order given. Each name must be one rustls has,
/// and the list must leave a suite for every protocol `-f` allows.
fn pick_suites(list: &str, protocol: Protocol) -> Result<Vec<SupportedCipherSuite>, String> {
    let all = ring::DEFAULT_CIPHER_SUITES;
    let mut out = Vec::new();
    for want in list.split(':').map(str::trim).filter(|w| !w.is_empty()) {
        let iana = OPENSSL_NAMES
            .iter()
            .find(|(o, _)| o.eq_ignore_ascii_case(want))
            .map_or(want, |(_, i)| i);
        let Some(s) = all
            .iter()
            .find(|s| suite_name(**s).eq_ignore_ascii_case(iana))
        else {
            let names: Vec<String> = all.iter().map(|s| suite_name(*s)).collect();
            return Err(format!(
                "-Z {want}: not a cipher suite loadlab's TLS (rustls) has; it has {}",
                names.join(", ")
            ));
        };
        out.push(*s);
    }
    let has = |v: &SupportedProtocolVersion| out.iter().any(|s| s.version() == v);
    let ok = match protocol {
        Protocol::All => !out.is_empty(),
        Protocol::Tls12 => has(&rustls::version::TLS12),
        Protocol::Tls13 => has(&rustls::version::TLS13),
    };
    if !ok {
        return Err(format!(
            "-Z {list}: no suite in the list fits the protocol asked for (-f)"
        ));
    }
    Ok(out)
}

/// The session a server negotiated, as ab's report shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TlsSession {
    /// ab's "SSL/TLS Protocol": version, suite (IANA name), key bits twice.
    pub protocol: String,
    /// ab's "Server Temp Key", e.g. "X25519 253 bits".
    pub temp_key: Option<String>,
    /// ab's "TLS Server Name": the SNI sent (absent with -I).
    pub server_name: Option<String>,
}

impl TlsSession {
    /// Describes `conn`'s session once its handshake is done.
    pub fn of(conn: &ClientConnection, sni: Option<&str>) -> Option<TlsSession> {
        let suite = conn.negotiated_cipher_suite()?;
        let version = match conn.protocol_version()? {
            rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3",
            rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2",
            _ => "unknown",
        };
        let name = suite_name(suite);
        let bits = if name.contains("AES_128") { 128 } else { 256 };
        let temp_key = conn
            .negotiated_key_exchange_group()
            .map(|g| match g.name() {
                rustls::NamedGroup::X25519 => "X25519 253 bits".to_string(),
                rustls::NamedGroup::secp256r1 => "ECDH P-256 256 bits".to_string(),
                rustls::NamedGroup::secp384r1 => "ECDH P-384 384 bits".to_string(),
                other => format!("{other:?}"),
            });
        Some(TlsSession {
            protocol: format!("{version},{name},{bits},{bits}"),
            temp_key,
            server_name: sni.map(str::to_string),
        })
    }
}

/// `--insecure`: any certificate is accepted, but handshake signatures are
/// still checked, so the session is at least with the certificate's key.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

/// rustls's check of one TLS version's handshake signature.
type SignatureCheck = fn(
    &[u8],
    &CertificateDer<'_>,
    &DigitallySignedStruct,
    &WebPkiSupportedAlgorithms,
) -> Result<HandshakeSignatureValid, rustls::Error>;

impl NoVerify {
    /// Checks a handshake signature with `check` and the provider's
    /// algorithms: TLS 1.2 and 1.3 differ only in the check.
    fn signature(
        &self,
        check: SignatureCheck,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        check(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
}

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.signature(rustls::crypto::verify_tls12_signature, message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.signature(rustls::crypto::verify_tls13_signature, message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f_takes_abs_spellings_and_refuses_what_rustls_lacks_in_one_line() {
        assert_eq!(Protocol::parse("TLS1.2"), Ok(Protocol::Tls12));
        assert_eq!(Protocol::parse("tls1.3"), Ok(Protocol::Tls13));
        assert_eq!(Protocol::parse("ALL"), Ok(Protocol::All));
        for old in ["SSL3", "TLS1", "TLS1.1", "SSL2"] {
            let e = Protocol::parse(old).unwrap_err();
            assert!(e.contains(old) && !e.contains('\n'), "{e}");
        }
        assert!(Protocol::parse("TLS9").is_err());
    }

    #[test]
    fn z_takes_iana_and_openssl_names_and_refuses_unknown_ones() {
        let s = pick_suites(
            "ECDHE-RSA-AES128-GCM-SHA256:TLS13_AES_128_GCM_SHA256",
            Protocol::All,
        )
        .unwrap();
        let names: Vec<String> = s.iter().map(|s| suite_name(*s)).collect();
        assert_eq!(
            names,
            [
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS13_AES_128_GCM_SHA256"
            ]
        );
        let e = pick_suites("RC4-MD5", Protocol::All).unwrap_err();
        assert!(e.contains("RC4-MD5") && !e.contains('\n'), "{e}");
        // A TLS 1.3 suite alone cannot serve -f TLS1.2.
        assert!(pick_suites("TLS_AES_128_GCM_SHA256", Protocol::Tls12).is_err());
    }
}
