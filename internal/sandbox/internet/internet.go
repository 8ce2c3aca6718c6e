package internet

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gitops-fleet/eks-fleet/internal/sandbox/pki"
)

// Internet stands in for every remote host the processes reach: an HTTP
// proxy (processes get HTTPS_PROXY, and SSL_CERT_FILE naming its CA) that
// terminates TLS for each host with a certificate of its own CA and answers
// from the handler registered for the host. A request to any other host
// fails with 502 and is recorded in Unexpected, so an egress the design
// did not plan shows.
type Internet struct {
	CA *pki.CA
	// CAFile holds the CA certificate (SSL_CERT_FILE of the processes).
	CAFile string
	// URL is the proxy's address (HTTPS_PROXY and HTTP_PROXY).
	URL string

	mu         sync.Mutex
	hosts      map[string]http.Handler
	certs      map[string]*tls.Certificate
	unexpected map[string]int
	registries map[string]*Registry
	log        *os.File
	listener   net.Listener
}

// NewInternet starts the proxy on ip (the pod network's host address, so
// pods reach it too); dir receives its CA file and request log.
func NewInternet(dir, ip string) (*Internet, error) {
	ca, err := pki.NewCA("e2e-internet")
	if err != nil {
		return nil, err
	}
	in := &Internet{CA: ca, CAFile: filepath.Join(dir, "internet-ca.crt"),
		hosts: map[string]http.Handler{}, certs: map[string]*tls.Certificate{}, unexpected: map[string]int{}}
	if err := os.WriteFile(in.CAFile, ca.CertPEM, 0o644); err != nil {
		return nil, err
	}
	if in.log, err = os.Create(filepath.Join(dir, "internet.log")); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, err
	}
	in.listener, in.URL = l, "http://"+l.Addr().String()
	go func() { _ = http.Serve(l, in) }()
	return in, nil
}

// Close stops the proxy.
func (in *Internet) Close() {
	in.listener.Close()
	in.log.Close()
}

// Handle serves host (a name, no port) with h.
func (in *Internet) Handle(host string, h http.Handler) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.hosts[host] = h
}

// HandleBackend serves host by forwarding to a plain-HTTP backend.
func (in *Internet) HandleBackend(host, backend string) error {
	u, err := url.Parse(backend)
	if err != nil {
		return err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Director = func(r *http.Request) {
		r.URL.Scheme, r.URL.Host = u.Scheme, u.Host
	}
	in.Handle(host, rp)
	return nil
}

// Env is the environment a process needs to reach the stand-in internet:
// the proxy for every scheme; loopback, the cluster's Service names and
// direct (the API servers, the Git server, the processes' own servers on
// the pod network) not proxied; only the proxy's CA trusted for TLS (by Go
// and by the AWS SDKs).
func (in *Internet) Env(direct ...string) []string {
	noProxy := strings.Join(append([]string{"127.0.0.1", "localhost", ".svc", ".cluster.local"}, direct...), ",")
	return []string{
		"HTTPS_PROXY=" + in.URL, "HTTP_PROXY=" + in.URL, "https_proxy=" + in.URL, "http_proxy=" + in.URL,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
		"SSL_CERT_FILE=" + in.CAFile,
		// The AWS SDKs' own CA bundle setting replaces the system roots.
		"AWS_CA_BUNDLE=" + in.CAFile,
	}
}

// Unexpected lists the hosts requested that no handler serves.
func (in *Internet) Unexpected() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []string
	for h, n := range in.unexpected {
		out = append(out, fmt.Sprintf("%s (%d)", h, n))
	}
	sort.Strings(out)
	return out
}

func (in *Internet) handler(host string) http.Handler {
	in.mu.Lock()
	defer in.mu.Unlock()
	if h, ok := in.hosts[host]; ok {
		return h
	}
	// Wildcards registered as "*.suffix".
	for pattern, h := range in.hosts {
		if suffix, ok := strings.CutPrefix(pattern, "*"); ok && strings.HasSuffix(host, suffix) {
			return h
		}
	}
	in.unexpected[host]++
	return nil
}

// ServeHTTP is the proxy: CONNECT is answered with TLS for the host, a
// plain request is served directly.
func (in *Internet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		in.connect(w, r)
		return
	}
	in.serve(w, r, r.URL.Hostname())
}

func (in *Internet) serve(w http.ResponseWriter, r *http.Request, host string) {
	fmt.Fprintf(in.log, "%s %s %s%s\n", time.Now().Format("15:04:05.000"), r.Method, host, r.URL.RequestURI())
	h := in.handler(host)
	if h == nil {
		http.Error(w, "e2e internet: no stand-in for "+host, http.StatusBadGateway)
		return
	}
	h.ServeHTTP(w, r)
}

func (in *Internet) cert(host string) (*tls.Certificate, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if c, ok := in.certs[host]; ok {
		return c, nil
	}
	kp, err := in.CA.Issue(host, nil, host)
	if err != nil {
		return nil, err
	}
	c, err := kp.TLS()
	if err != nil {
		return nil, err
	}
	in.certs[host] = &c
	return &c, nil
}

func (in *Internet) connect(w http.ResponseWriter, r *http.Request) {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "no hijack", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		conn.Close()
		return
	}
	tlsConn := tls.Server(&bufConn{Conn: conn, r: buf.Reader}, &tls.Config{
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := hello.ServerName
			if name == "" {
				name = host
			}
			return in.cert(name)
		},
		NextProtos: []string{"http/1.1"},
	})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Scheme, r.URL.Host = "https", r.Host
		in.serve(w, r, host)
	}), ReadHeaderTimeout: 30 * time.Second}
	_ = srv.Serve(&oneConnListener{conn: tlsConn})
}

// bufConn reads first what the hijacked buffer already holds.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// oneConnListener serves one connection, then reports closed once the
// connection is done.
type oneConnListener struct {
	conn net.Conn
	once sync.Once
	done chan struct{}
	mu   sync.Mutex
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.done == nil {
		l.done = make(chan struct{})
	}
	done := l.done
	l.mu.Unlock()
	var c net.Conn
	l.once.Do(func() { c = &closeNotify{Conn: l.conn, done: done} })
	if c != nil {
		return c, nil
	}
	<-done
	return nil, io.EOF
}

func (l *oneConnListener) Close() error { return nil }

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

type closeNotify struct {
	net.Conn
	done chan struct{}
	once sync.Once
}

func (c *closeNotify) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.done) })
	return err
}
