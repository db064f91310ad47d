package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/ioutil"
	"os"
	"path"
	"strings"
	"sync"

	smb2 "github.com/hirochachacha/go-smb2"
	quic "github.com/lucas-clemente/quic-go"

	"squic"
)

// smbErr is an error with the exit code it should end smbqc with.
type smbErr struct {
	code int
	kind string
	err  error
}

func (e *smbErr) Error() string { return fmt.Sprintf("%s: %v", e.kind, e.err) }

func errc(code int, kind string, err error) error { return &smbErr{code, kind, err} }

// die ends smbqc with the code and line an error carries.
func die(err error) {
	if e, ok := err.(*smbErr); ok {
		fail(e.code, e.kind, "%v", e.err)
	}
	fail(exitIO, "io", "%v", err)
}

// session is one QUIC connection carrying one SMB session and one tree.
type session struct {
	w  *wireConn
	s  *smb2.Session
	fs *smb2.Share
}

// open dials QUIC, negotiates, authenticates with NTLM and mounts the
// share; the frame counts restart after the mount.
func open() (*session, error) {
	w, err := dial()
	if err != nil {
		return nil, errc(exitQUIC, "quic", err)
	}
	w.dropInterim = o.sign
	d := &smb2.Dialer{
		Negotiator: smb2.Negotiator{RequireMessageSigning: o.sign},
		Initiator:  &smb2.NTLMInitiator{User: o.user, Password: o.pass, Domain: o.domain},
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	s, err := d.DialContext(ctx, w)
	if err != nil {
		err = setupErr(w, err)
		w.Close()
		w.pc.Close()
		return nil, err
	}
	fs, err := s.Mount(fmt.Sprintf(`\\%s\%s`, o.name, o.share))
	if err != nil {
		s.Logoff()
		w.pc.Close()
		return nil, errc(exitSMB, "smb", fmt.Errorf("tree connect %s: %v", o.share, err))
	}
	w.frames.markNow()
	return &session{w: w, s: s, fs: fs}, nil
}

// setupErr classifies a failed SMB setup: in TLS 1.3 the server judges a
// client certificate after the client's handshake is done, so a refusal
// (a TLS alert) comes as the stream's end, and is a QUIC failure.
func setupErr(w *wireConn, err error) error {
	var te *quic.TransportError
	var ae *quic.ApplicationError
	var ie *quic.IdleTimeoutError
	if re := w.readErr; re != nil && (errors.As(re, &te) || errors.As(re, &ae) || errors.As(re, &ie)) {
		return errc(exitQUIC, "quic", fmt.Errorf("%s", squic.Describe(re)))
	}
	if w.Conn.Context().Err() != nil {
		// The connection ended under go-smb2, which kept only the text.
		return errc(exitQUIC, "quic", fmt.Errorf("connection closed during SMB setup: %v", err))
	}
	return errc(exitSMB, "smb", err)
}

// close disconnects the tree (its answer is the last of the share's, so
// every answer has come), logs off, and checks -seal and -sign against
// the answers counted from the mount to the tree disconnect.
func (ss *session) close() error {
	ss.fs.Umount()
	// Counted before the LOGOFF: where only the share asks for
	// encryption, a session-level request is signed, not sealed.
	plain, signed, enc := ss.w.frames.since()
	ss.s.Logoff()
	ss.w.Close()
	ss.w.pc.Close()
	fmt.Printf("session frames plain=%d signed=%d encrypted=%d interim=%d bytes=%d\n", plain, signed, enc,
		ss.w.frames.interim, ss.w.bytes)
	if o.seal && (plain+signed > 0 || enc == 0) {
		return errc(exitVerify, "verify", fmt.Errorf("not sealed: %d answers after the mount were not encrypted, %d were", plain+signed, enc))
	}
	if o.sign && (plain > 0 || signed+enc == 0) {
		return errc(exitVerify, "verify", fmt.Errorf("not signed: %d answers after the mount were neither signed nor sealed", plain))
	}
	return nil
}

// remote turns a share path with slashes into go-smb2's form.
func remote(p string) string {
	return strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", `\`)
}

// single runs put, get, rm or ls in one session.
func single(cmd string, args []string) {
	ss, err := open()
	if err != nil {
		die(err)
	}
	switch cmd {
	case "put":
		err = put(ss, args[0], args[1])
	case "get":
		err = get(ss, args[0], args[1])
	case "rm":
		err = ss.fs.Remove(remote(args[0]))
		if err != nil {
			err = errc(exitIO, "io", err)
		}
	case "ls":
		err = ls(ss, args[0])
	}
	if err != nil {
		die(err)
	}
	if err := ss.close(); err != nil {
		die(err)
	}
}

// put copies a local file to the share, hashing what it sends.
func put(ss *session, local, rpath string) error {
	in, err := os.Open(local)
	if err != nil {
		return errc(exitUsage, "usage", err)
	}
	defer in.Close()
	f, err := ss.fs.Create(remote(rpath))
	if err != nil {
		return errc(exitIO, "io", fmt.Errorf("create %s: %v", rpath, err))
	}
	h := sha256.New()
	n, err := io.CopyBuffer(struct{ io.Writer }{f}, io.TeeReader(in, h), make([]byte, 1<<20))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errc(exitIO, "io", fmt.Errorf("put %s: %v after %d bytes", rpath, err, n))
	}
	fmt.Printf("put %s bytes=%d sha256=%s\n", rpath, n, hex.EncodeToString(h.Sum(nil)))
	return nil
}

// get copies a share file to a local one ("-": nowhere), hashing what
// came over the wire.
func get(ss *session, rpath, local string) error {
	f, err := ss.fs.Open(remote(rpath))
	if err != nil {
		return errc(exitIO, "io", fmt.Errorf("open %s: %v", rpath, err))
	}
	defer f.Close()
	var out io.Writer = ioutil.Discard
	if local != "-" {
		lf, err := os.Create(local)
		if err != nil {
			return errc(exitUsage, "usage", err)
		}
		defer lf.Close()
		out = lf
	}
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(out, h), struct{ io.Reader }{f}, make([]byte, 1<<20))
	if err != nil {
		return errc(exitIO, "io", fmt.Errorf("get %s: %v after %d bytes", rpath, err, n))
	}
	fmt.Printf("get %s bytes=%d sha256=%s\n", rpath, n, hex.EncodeToString(h.Sum(nil)))
	return nil
}

// ls prints one line per entry: size and name.
func ls(ss *session, dir string) error {
	d := remote(dir)
	if d == "." {
		d = ""
	}
	ents, err := ss.fs.ReadDir(d)
	if err != nil {
		return errc(exitIO, "io", fmt.Errorf("ls %s: %v", dir, err))
	}
	for _, e := range ents {
		fmt.Printf("%d %s\n", e.Size(), e.Name())
	}
	return nil
}

// roundTrip writes size random bytes to rpath, reads them back and
// compares the hashes; returns the hash.
func roundTrip(ss *session, rpath string, size int64) (string, error) {
	buf := make([]byte, size)
	rand.Read(buf)
	sum := sha256.Sum256(buf)
	if err := ss.fs.WriteFile(remote(rpath), buf, 0644); err != nil {
		return "", errc(exitIO, "io", fmt.Errorf("write %s: %v", rpath, err))
	}
	got, err := ss.fs.ReadFile(remote(rpath))
	if err != nil {
		return "", errc(exitIO, "io", fmt.Errorf("read %s: %v", rpath, err))
	}
	if sha256.Sum256(got) != sum {
		return "", errc(exitVerify, "verify", fmt.Errorf("%s: %d bytes read back differ from the %d written", rpath, len(got), size))
	}
	return hex.EncodeToString(sum[:]), nil
}

// many puts N files of SIZE bytes into DIR in one session and reads each back.
func many(ns, sizes, dir string) {
	n, size := counts(ns, sizes)
	ss, err := open()
	if err != nil {
		die(err)
	}
	if err := ss.fs.MkdirAll(remote(dir), 0755); err != nil {
		die(errc(exitIO, "io", fmt.Errorf("mkdir %s: %v", dir, err)))
	}
	for i := int64(0); i < n; i++ {
		if _, err := roundTrip(ss, path.Join(dir, fmt.Sprintf("f%05d", i)), size); err != nil {
			die(err)
		}
	}
	if err := ss.close(); err != nil {
		die(err)
	}
	fmt.Printf("many files=%d bytes=%d ok\n", n, n*size)
}

// sessions runs N sessions at once, each on its own QUIC connection,
// each writing and reading back PREFIX.K.
func sessions(ns, sizes, prefix string) {
	n, size := counts(ns, sizes)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := int64(0); i < n; i++ {
		wg.Add(1)
		go func(i int64) {
			defer wg.Done()
			ss, err := open()
			if err != nil {
				errs[i] = err
				return
			}
			rp := fmt.Sprintf("%s.%d", prefix, i)
			sum, err := roundTrip(ss, rp, size)
			if cerr := ss.close(); err == nil {
				err = cerr
			}
			errs[i] = err
			if err == nil {
				fmt.Printf("session %d %s bytes=%d sha256=%s\n", i, rp, size, sum)
			}
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			die(err)
		}
	}
	fmt.Printf("sessions n=%d ok\n", n)
}

// counts parses N and SIZE.
func counts(ns, sizes string) (int64, int64) {
	n, err := parseSize(ns)
	if err != nil || n == 0 {
		fail(exitUsage, "usage", "N: %q", ns)
	}
	size, err := parseSize(sizes)
	if err != nil {
		fail(exitUsage, "usage", "SIZE: %v", err)
	}
	return n, size
}

// netcat copies stdin to the stream (then FIN) and the stream to stdout,
// both at once, until the server's FIN.
func netcat() {
	w, err := dial()
	if err != nil {
		die(errc(exitQUIC, "quic", err))
	}
	w.raw = true
	up := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(struct{ io.Writer }{w}, os.Stdin)
		w.StreamConn.Stream.Close()
		up <- n
	}()
	down, err := io.Copy(os.Stdout, struct{ io.Reader }{w})
	var upn int64 = -1
	select {
	case upn = <-up:
	default:
	}
	w.Close()
	w.pc.Close()
	fmt.Fprintf(os.Stderr, "smbqc: nc up=%d down=%d\n", upn, down)
	var te *quic.TransportError
	if err != nil && down == 0 && errors.As(err, &te) {
		// Refused after the client's TLS 1.3 handshake (a client
		// certificate denied): a QUIC failure, as in SMB setup.
		fail(exitQUIC, "quic", "%s", squic.Describe(err))
	}
	if err != nil {
		fail(exitIO, "io", "stream: %s", squic.Describe(err))
	}
}
