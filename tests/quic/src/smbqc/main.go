// Command smbqc is an SMB-over-QUIC client written on an independent
// stack (quic-go and go-smb2), to test QUIC servers and relays with: see
// tests/quic/README.md for its commands, output lines and exit codes.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	quic "github.com/lucas-clemente/quic-go"

	"squic"
)

// Exit codes, one per kind of failure, for tests to assert on.
const (
	exitUsage  = 1 // bad arguments, local file errors
	exitQUIC   = 2 // QUIC or TLS handshake, stream
	exitSMB    = 3 // SMB negotiate, authentication, tree connect
	exitIO     = 4 // an SMB operation or the transfer failed
	exitVerify = 5 // bytes differ, or -seal / -sign not met
)

// opts are the command-line settings every command shares.
type opts struct {
	addr, name, ca, cert, key, alpn, local string
	user, pass, domain, share              string
	sign, seal, keepOld                    bool
	rebindAfter, rebindEvery               int64
	timeout, idle                          time.Duration
}

var o opts

// flags is smbqc's flag set, for usage() to print.
var flags = flag.NewFlagSet("smbqc", flag.ContinueOnError)

// fail prints one "smbqc: KIND: reason" line and exits with code.
func fail(code int, kind string, format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "smbqc: %s: %s\n", kind, fmt.Sprintf(format, a...))
	os.Exit(code)
}

func main() {
	fs := flags
	fs.Usage = usage
	fs.StringVar(&o.addr, "addr", "127.0.0.1:443", "UDP address of the QUIC server")
	fs.StringVar(&o.name, "name", "", "server name: SNI, certificate check and \\\\NAME\\share (default: host of -addr)")
	fs.StringVar(&o.ca, "ca", "", "CA certificate(s) to verify the server with (PEM; default: system pool)")
	fs.StringVar(&o.cert, "cert", "", "client certificate (PEM)")
	fs.StringVar(&o.key, "key", "", "client key (PEM)")
	fs.StringVar(&o.alpn, "alpn", squic.ALPN, "ALPN to offer")
	fs.StringVar(&o.local, "local", "", "local IP to send from (default: any)")
	fs.StringVar(&o.user, "user", "root", "NTLM user")
	fs.StringVar(&o.pass, "pass", "", "NTLM password")
	fs.StringVar(&o.domain, "domain", "", "NTLM domain")
	fs.StringVar(&o.share, "share", "share", "share name")
	fs.BoolVar(&o.sign, "sign", false, "require signing, and check every answer after the mount is signed or sealed")
	fs.BoolVar(&o.seal, "seal", false, "check every answer after the mount is encrypted (the server must ask for it)")
	fs.Var(sizeFlag{&o.rebindAfter}, "rebind-after", "after BYTES on the stream, send from a new UDP port")
	fs.Var(sizeFlag{&o.rebindEvery}, "rebind-every", "with -rebind-after, send from a new UDP port again after every further BYTES")
	fs.BoolVar(&o.keepOld, "rebind-keep-old", false, "after a rebind, still receive on the old port")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "handshake and SMB setup timeout")
	fs.DurationVar(&o.idle, "idle", 30*time.Second, "QUIC idle timeout (a server that stopped answering)")
	if fs.Parse(os.Args[1:]) != nil {
		os.Exit(exitUsage) // not the flag package's 2, which is exitQUIC
	}
	args := fs.Args()
	if len(args) == 0 {
		usage()
	}
	if o.name == "" {
		h, _, err := net.SplitHostPort(o.addr)
		if err != nil {
			fail(exitUsage, "usage", "-addr %s: %v", o.addr, err)
		}
		o.name = h
	}
	run(args[0], args[1:])
}

// run dispatches a command.
func run(cmd string, args []string) {
	need := map[string]int{"nc": 0, "put": 2, "get": 2, "rm": 1, "ls": 1, "many": 3, "sessions": 3}
	n, ok := need[cmd]
	if !ok || len(args) != n {
		usage()
	}
	switch cmd {
	case "nc":
		netcat()
	case "many":
		many(args[0], args[1], args[2])
	case "sessions":
		sessions(args[0], args[1], args[2])
	default:
		single(cmd, args)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: smbqc [flags] COMMAND ARGS
  put LOCAL REMOTE        write a local file to the share
  get REMOTE LOCAL        read a share file (LOCAL "-": discard)
  rm REMOTE               remove a share file
  ls DIR                  list a share directory ("." the root)
  many N SIZE DIR         put N files of SIZE random bytes into DIR, read back, compare
  sessions N SIZE PREFIX  N concurrent sessions each put and get PREFIX.K
  nc                      raw: stdin -> stream, stream -> stdout
flags:
`)
	flags.PrintDefaults()
	os.Exit(exitUsage)
}

// sizeFlag parses 123, 4K, 5M, 1G.
type sizeFlag struct{ p *int64 }

func (s sizeFlag) String() string {
	if s.p == nil {
		return "0"
	}
	return strconv.FormatInt(*s.p, 10)
}

func (s sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	*s.p = n
	return err
}

func parseSize(v string) (int64, error) {
	mul := int64(1)
	switch {
	case strings.HasSuffix(v, "K"):
		mul = 1 << 10
	case strings.HasSuffix(v, "M"):
		mul = 1 << 20
	case strings.HasSuffix(v, "G"):
		mul = 1 << 30
	}
	if mul > 1 {
		v = v[:len(v)-1]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a size: %q", v)
	}
	return n * mul, nil
}

// dial makes the QUIC connection from a socket smbqc controls (so that
// -rebind-after can replace it) and opens the one bidirectional stream.
// Errors are returned described for a one-line message.
func dial() (*wireConn, error) {
	tc, err := squic.ClientTLS(o.ca, o.name, o.cert, o.key, o.alpn)
	if err != nil {
		fail(exitUsage, "tls", "%v", err)
	}
	raddr, err := net.ResolveUDPAddr("udp", o.addr)
	if err != nil {
		fail(exitUsage, "usage", "-addr %s: %v", o.addr, err)
	}
	la := &net.UDPAddr{}
	if o.local != "" {
		la.IP = net.ParseIP(o.local)
	}
	pc, err := squic.NewRebindConn(la)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	qc := squic.Config(o.timeout)
	qc.MaxIdleTimeout = o.idle
	if o.idle <= 15*time.Second {
		qc.KeepAlivePeriod = o.idle / 2
	}
	c, err := quic.DialContext(ctx, pc, raddr, o.name, tc, qc)
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("%s", squic.Describe(err))
	}
	st, err := c.OpenStreamSync(ctx)
	if err != nil {
		c.CloseWithError(0, "")
		pc.Close()
		return nil, fmt.Errorf("stream: %s", squic.Describe(err))
	}
	alpn := c.ConnectionState().TLS.NegotiatedProtocol
	fmt.Fprintf(os.Stderr, "smbqc: quic connected %s -> %s alpn=%s tls=%s\n", c.LocalAddr(), c.RemoteAddr(),
		alpn, tlsVersion(c.ConnectionState().TLS.Version))
	return &wireConn{StreamConn: &squic.StreamConn{Stream: st, Conn: c}, rebindAfter: o.rebindAfter,
		rebindEvery: o.rebindEvery, pc: pc,
		keepOld: o.keepOld}, nil
}

func tlsVersion(v uint16) string {
	if v == tls.VersionTLS13 {
		return "1.3"
	}
	return fmt.Sprintf("0x%04x", v)
}
