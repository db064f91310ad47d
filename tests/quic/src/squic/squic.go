// Package squic holds what smbqc and quicrelay share: the TLS and QUIC
// settings of SMB over QUIC (MS-SMB2 2.1: QUIC v1, ALPN "smb", TLS 1.3),
// a QUIC stream seen as a net.Conn, and error lines a test can match.
package squic

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/ioutil"
	"net"
	"time"

	quic "github.com/lucas-clemente/quic-go"
)

// ALPN is the application protocol SMB over QUIC negotiates.
const ALPN = "smb"

// ClientTLS builds the client's TLS settings: the server certificate is
// verified against the CA in caFile (the system pool when empty) and the
// name; certFile/keyFile, when given, are the client certificate.
func ClientTLS(caFile, name, certFile, keyFile, alpn string) (*tls.Config, error) {
	c := &tls.Config{ServerName: name, NextProtos: []string{alpn}, MinVersion: tls.VersionTLS13}
	if caFile != "" {
		pem, err := ioutil.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in it", caFile)
		}
		c.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		kp, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c, nil
}

// ServerTLS builds the server's TLS settings; with clientCA, a client
// certificate issued by that CA is required.
func ServerTLS(certFile, keyFile, clientCA, alpn string) (*tls.Config, error) {
	kp, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{Certificates: []tls.Certificate{kp}, NextProtos: []string{alpn}, MinVersion: tls.VersionTLS13}
	if clientCA != "" {
		pem, err := ioutil.ReadFile(clientCA)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in it", clientCA)
		}
		c.ClientCAs = pool
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// Config is the QUIC configuration both programs use: QUIC v1 only (what
// MsQuic starts with), keepalives so that an idle SMB session lives, and
// windows large enough for a gigabit on loopback.
func Config(handshake time.Duration) *quic.Config {
	return &quic.Config{
		Versions:                       []quic.VersionNumber{quic.Version1},
		HandshakeIdleTimeout:           handshake,
		MaxIdleTimeout:                 60 * time.Second,
		KeepAlivePeriod:                15 * time.Second,
		MaxStreamReceiveWindow:         16 << 20,
		MaxConnectionReceiveWindow:     24 << 20,
		InitialStreamReceiveWindow:     1 << 20,
		InitialConnectionReceiveWindow: 2 << 20,
		MaxIncomingStreams:             4,
		MaxIncomingUniStreams:          -1,
	}
}

// StreamConn is one bidirectional QUIC stream seen as a net.Conn, the
// addresses taken from its connection; Close ends the whole connection.
type StreamConn struct {
	quic.Stream
	Conn quic.Connection
}

// LocalAddr is the connection's local UDP address.
func (s *StreamConn) LocalAddr() net.Addr { return s.Conn.LocalAddr() }

// RemoteAddr is the connection's peer UDP address.
func (s *StreamConn) RemoteAddr() net.Addr { return s.Conn.RemoteAddr() }

// Close sends FIN, stops reading and closes the QUIC connection with
// code 0: a net.Conn's Close ends both directions.
func (s *StreamConn) Close() error {
	s.Stream.Close()
	s.Stream.CancelRead(0)
	return s.Conn.CloseWithError(0, "")
}

// Describe renders a QUIC error for a one-line message: a TLS alert is
// named "tls-alert=N" (N the TLS alert number, e.g. 120 for a wrong ALPN,
// 49 access_denied, 48 unknown_ca, 42 bad_certificate), a timeout
// "timeout", so that a test can match the reason.
func Describe(err error) string {
	var te *quic.TransportError
	if errors.As(err, &te) && te.ErrorCode >= 0x100 && te.ErrorCode <= 0x1ff {
		side := "local"
		if te.Remote {
			side = "remote"
		}
		return fmt.Sprintf("tls-alert=%d (%s): %v", uint64(te.ErrorCode)-0x100, side, err)
	}
	var ie *quic.IdleTimeoutError
	var he *quic.HandshakeTimeoutError
	if errors.As(err, &ie) || errors.As(err, &he) {
		return fmt.Sprintf("timeout: %v", err)
	}
	var ue x509.UnknownAuthorityError
	var ce x509.CertificateInvalidError
	var hn x509.HostnameError
	if errors.As(err, &ue) || errors.As(err, &ce) || errors.As(err, &hn) {
		return fmt.Sprintf("certificate: %v", err)
	}
	return err.Error()
}
