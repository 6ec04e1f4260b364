package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agora-sched/agora/devices/resource"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/market/names"
)

// The authority's commands: they run where the authority's key is kept
// (offline, ideally), sign certificates and revocations, and write them
// to files the operator carries to the nodes and users.

func init() {
	register("authority", "create a cluster authority (init) or a site delegate (delegate)", cmdAuthority)
	register("admit", "sign a node certificate for a peer ID", cmdAdmit)
	register("user", "create a user credential (user add)", cmdUser)
	register("revoke", "sign a revocation, or publish one through a node", cmdRevoke)
}

// Files of an authority directory.
const (
	authorityKeyFile = "authority.key"
	authorityPubFile = "authority.pub"
	delegateKeyFile  = "delegate.key"
	delegateCertFile = "delegate.crt"
)

// defaultValidity is how long certificates are valid unless --valid says.
const defaultValidity = 720 * time.Hour

func cmdAuthority(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && isHelp(args[0]) {
		printHelp(stdout, "authority", nil)
		return exitOK
	}
	if len(args) > 0 && badSubcommandFlag("authority", args[0], stderr) {
		return exitBadUsage
	}
	if len(args) == 0 || (args[0] != "init" && args[0] != "delegate") {
		fmt.Fprintln(stderr, "agora authority: usage: agora authority init DIR | agora authority delegate --authority DIR NAME --site S --out DIR2")
		return exitBadUsage
	}
	if args[0] == "delegate" {
		return cmdDelegate(args[1:], stdout, stderr)
	}
	fs := newFlagSet("authority init", stdout, stderr)
	asJSON := fs.Bool("json", false, `print {"authority": ..., "dir": ...}`)
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return flagExit(err)
	}
	dir, ok := onlyArg("authority init", "DIR", pos, stderr)
	if !ok {
		return exitBadUsage
	}
	key, err := auth.NewKey(rand.Reader)
	if err != nil {
		fmt.Fprintf(stderr, "agora authority init: %v\n", err)
		return exitFailed
	}
	if code := writeAuthorityDir(dir, auth.AuthorityKey, authorityKeyFile, key, nil, key.Public().(ed25519.PublicKey), stderr, "authority init"); code != exitOK {
		return code
	}
	if *asJSON {
		printJSON(stdout, map[string]string{"authority": auth.AuthorityText(key.Public().(ed25519.PublicKey)), "dir": dir})
		return exitOK
	}
	fmt.Fprintln(stdout, auth.AuthorityText(key.Public().(ed25519.PublicKey)))
	return exitOK
}

// writeAuthorityDir creates dir and writes a private key (0600), the
// delegate chain if any, and authority.pub; it never overwrites a key.
func writeAuthorityDir(dir string, kind auth.KeyKind, keyFile string, key ed25519.PrivateKey, chain auth.Chain, root ed25519.PublicKey, stderr io.Writer, cmd string) int {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fmt.Fprintf(stderr, "agora %s: %v\n", cmd, err)
		return exitBadUsage
	}
	path := filepath.Join(dir, keyFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			fmt.Fprintf(stderr, "agora %s: %s exists already; refusing to overwrite a key\n", cmd, path)
		} else {
			fmt.Fprintf(stderr, "agora %s: %v\n", cmd, err)
		}
		return exitBadUsage
	}
	_, err = f.Write(auth.EncodeKey(kind, key))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && chain != nil {
		err = os.WriteFile(filepath.Join(dir, delegateCertFile), chain.PEM(), 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, authorityPubFile), []byte(auth.AuthorityText(root)+"\n"), 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "agora %s: %v\n", cmd, err)
		return exitFailed
	}
	return exitOK
}

// loadIssuer reads an authority directory: the authority's key, or a
// delegate's key and chain.
func loadIssuer(dir string) (auth.Issuer, ed25519.PublicKey, error) {
	if dir == "" {
		return auth.Issuer{}, nil, errors.New("--authority DIR is required")
	}
	pubText, err := os.ReadFile(filepath.Join(dir, authorityPubFile))
	if err != nil {
		return auth.Issuer{}, nil, fmt.Errorf("authority directory %s: %w", dir, err)
	}
	root, err := auth.ParseAuthority(string(pubText))
	if err != nil {
		return auth.Issuer{}, nil, fmt.Errorf("%s: %w", filepath.Join(dir, authorityPubFile), err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, authorityKeyFile)); err == nil {
		k, err := auth.ParseKey(b, auth.AuthorityKey)
		if err != nil {
			return auth.Issuer{}, nil, fmt.Errorf("%s: %w", filepath.Join(dir, authorityKeyFile), err)
		}
		if !k.Public().(ed25519.PublicKey).Equal(root) {
			return auth.Issuer{}, nil, fmt.Errorf("%s: the key is not the one authority.pub names", dir)
		}
		return auth.Issuer{Key: k}, root, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return auth.Issuer{}, nil, err
	}
	kb, err := os.ReadFile(filepath.Join(dir, delegateKeyFile))
	if err != nil {
		return auth.Issuer{}, nil, fmt.Errorf("authority directory %s holds neither %s nor %s", dir, authorityKeyFile, delegateKeyFile)
	}
	k, err := auth.ParseKey(kb, auth.DelegateKey)
	if err != nil {
		return auth.Issuer{}, nil, fmt.Errorf("%s: %w", filepath.Join(dir, delegateKeyFile), err)
	}
	cb, err := os.ReadFile(filepath.Join(dir, delegateCertFile))
	if err != nil {
		return auth.Issuer{}, nil, err
	}
	ch, err := auth.ParseChainPEM(cb)
	if err != nil {
		return auth.Issuer{}, nil, fmt.Errorf("%s: %w", filepath.Join(dir, delegateCertFile), err)
	}
	if err := auth.NewBook(root).VerifyChain(ch, time.Now()); err != nil {
		return auth.Issuer{}, nil, fmt.Errorf("%s: %w", filepath.Join(dir, delegateCertFile), err)
	}
	if ch[0].Kind != auth.Delegate || !k.Public().(ed25519.PublicKey).Equal(ed25519.PublicKey(ch[0].Key)) {
		return auth.Issuer{}, nil, fmt.Errorf("%s: not the delegate certificate of %s", delegateCertFile, delegateKeyFile)
	}
	return auth.Issuer{Key: k, Chain: ch}, root, nil
}

// outFile writes data to path, or to stdout when path is empty; private
// is written with mode 0600.
func outFile(path string, data []byte, private bool, stdout io.Writer) error {
	if path == "" {
		_, err := stdout.Write(data)
		return err
	}
	mode := os.FileMode(0o644)
	if private {
		mode = 0o600
	}
	// Through a temporary file and a rename: a renewal writing over the
	// file it read leaves the old or the new one, never half of either.
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func validFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("valid", defaultValidity, "how long the certificate is valid")
}

func cmdDelegate(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("authority delegate", stdout, stderr)
	dir := fs.String("authority", "", "the authority directory (from agora authority init)")
	site := fs.String("site", "", "the site the delegate may admit nodes to (required)")
	out := fs.String("out", "", "the delegate's directory to create (required)")
	valid := fs.Duration("valid", 8760*time.Hour, "how long the delegate certificate is valid")
	asJSON := fs.Bool("json", false, `print {"delegate": ..., "site": ..., "dir": ...}`)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	name, ok := onlyArg("authority delegate", "NAME", pos, stderr)
	if !ok {
		return exitBadUsage
	}
	if *site == "" || *out == "" || !validName(name) {
		fmt.Fprintln(stderr, "agora authority delegate: NAME (letters, digits, . _ -), --site and --out are required")
		return exitBadUsage
	}
	is, root, err := loadIssuer(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "agora authority delegate: %v\n", err)
		return exitBadUsage
	}
	key, err := auth.NewKey(rand.Reader)
	if err != nil {
		fmt.Fprintf(stderr, "agora authority delegate: %v\n", err)
		return exitFailed
	}
	ch, err := is.IssueDelegate(name, key.Public().(ed25519.PublicKey), *site, time.Now(), *valid, rand.Reader)
	if err != nil {
		fmt.Fprintf(stderr, "agora authority delegate: %v\n", err)
		return exitBadUsage
	}
	if code := writeAuthorityDir(*out, auth.DelegateKey, delegateKeyFile, key, ch, root, stderr, "authority delegate"); code != exitOK {
		return code
	}
	if *asJSON {
		printJSON(stdout, map[string]string{"delegate": name, "site": *site, "dir": *out})
		return exitOK
	}
	fmt.Fprintf(stdout, "delegate %s admits nodes to site %s: %s\n", name, *site, *out)
	return exitOK
}

func cmdAdmit(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("admit", stdout, stderr)
	dir := fs.String("authority", "", "the authority directory (from agora authority init, or a delegate's)")
	site := fs.String("site", "", "the node's site")
	out := fs.String("out", "", "write the certificate here (default: stdout)")
	valid := validFlag(fs)
	var roles multiFlag
	fs.Var(&roles, "role", "a role of the node (repeatable)")
	renew := fs.String("renew", "", "renew this node certificate (the node's --cert file): the same peer ID, site and roles, valid for --valid from now")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if *renew != "" {
		if len(pos) > 0 || *site != "" || len(roles) > 0 {
			fmt.Fprintln(stderr, "agora admit: --renew keeps the certificate's peer ID, site and roles: give no PEER_ID, --site or --role")
			return exitBadUsage
		}
		return renewCert("admit", *dir, *renew, *valid, *out, stdout, stderr, func(b []byte) (auth.Chain, error) { return auth.ParseChainPEM(b) },
			func(ch auth.Chain) []byte { return ch.PEM() }, false)
	}
	peerID, ok := onlyArg("admit", "PEER_ID", pos, stderr)
	if !ok {
		return exitBadUsage
	}
	if _, err := peer.Decode(peerID); err != nil {
		fmt.Fprintf(stderr, "agora admit: %q is not a peer ID (agora id, or agora node --init, prints it)\n", peerID)
		return exitBadUsage
	}
	is, _, err := loadIssuer(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "agora admit: %v\n", err)
		return exitBadUsage
	}
	ch, err := is.IssueNode(peerID, *site, roles, time.Now(), *valid, rand.Reader)
	if err != nil {
		fmt.Fprintf(stderr, "agora admit: %v\n", err)
		return exitBadUsage
	}
	if err := outFile(*out, ch.PEM(), false, stdout); err != nil {
		fmt.Fprintf(stderr, "agora admit: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// renewCert renews the certificate chain in file (read by parse, written
// back by encode: a node certificate, or a user credential with its
// key), for valid from now, to out (stdout when ""); private writes the
// file 0600.
func renewCert(cmd, dir, file string, valid time.Duration, out string, stdout, stderr io.Writer,
	parse func([]byte) (auth.Chain, error), encode func(auth.Chain) []byte, private bool) int {
	b, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "agora %s: %v\n", cmd, err)
		return exitBadUsage
	}
	old, err := parse(b)
	if err != nil {
		fmt.Fprintf(stderr, "agora %s: %s: %v\n", cmd, file, err)
		return exitBadUsage
	}
	is, _, err := loadIssuer(dir)
	if err != nil {
		fmt.Fprintf(stderr, "agora %s: %v\n", cmd, err)
		return exitBadUsage
	}
	ch, err := is.Renew(old, time.Now(), valid, rand.Reader)
	if err != nil {
		fmt.Fprintf(stderr, "agora %s: %v\n", cmd, err)
		return exitBadUsage
	}
	if err := outFile(out, encode(ch), private, stdout); err != nil {
		fmt.Fprintf(stderr, "agora %s: %v\n", cmd, err)
		return exitFailed
	}
	if out != "" {
		fmt.Fprintf(stderr, "agora %s: %s %s renewed until %s\n", cmd, ch[0].Kind, ch[0].Subject, ch.Expiry().UTC().Format(time.RFC3339))
	}
	return exitOK
}

// cmdUserRenew renews a user's credential: the same key, name, role and
// quota, valid anew.
func cmdUserRenew(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("user renew", stdout, stderr)
	dir := fs.String("authority", "", "the authority directory (from agora authority init)")
	out := fs.String("out", "", "write the renewed credential here, mode 0600 (default: stdout; may be the same file)")
	valid := validFlag(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	file, ok := onlyArg("user renew", "CREDENTIAL", pos, stderr)
	if !ok {
		return exitBadUsage
	}
	var key ed25519.PrivateKey
	return renewCert("user renew", *dir, file, *valid, *out, stdout, stderr,
		func(b []byte) (auth.Chain, error) {
			c, err := auth.ParseCredential(b)
			key = c.Key
			return c.Chain, err
		},
		func(ch auth.Chain) []byte { return auth.Credential{Key: key, Chain: ch}.PEM() }, true)
}

func cmdUser(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && isHelp(args[0]) {
		printHelp(stdout, "user", nil)
		return exitOK
	}
	if len(args) > 0 && badSubcommandFlag("user", args[0], stderr) {
		return exitBadUsage
	}
	if len(args) > 0 && args[0] == "renew" {
		return cmdUserRenew(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "add" {
		fmt.Fprintln(stderr, "agora user: usage: agora user renew --authority DIR CREDENTIAL | agora user add --authority DIR NAME [--admin] [--max-cpu N] [--max-gpu N] [--max-priority P] [--max-running-cpu N] [--max-running-gpu N] [--max-running-jobs N] [--share N] [--valid 720h] [--out FILE]")
		return exitBadUsage
	}
	fs := newFlagSet("user add", stdout, stderr)
	dir := fs.String("authority", "", "the authority directory (from agora authority init)")
	admin := fs.Bool("admin", false, "the user administers the cluster: may cancel and read every job")
	maxCPU := fs.String("max-cpu", "", "the most CPUs one task replica may ask for (e.g. 4, 500m; default: no limit)")
	maxGPU := fs.Int("max-gpu", auth.Unlimited, "the most GPUs one task replica may ask for (default: no limit)")
	maxPrio := fs.Int("max-priority", auth.Unlimited, "the highest priority the user's jobs may ask for (default: no limit)")
	maxRunCPU := fs.String("max-running-cpu", "", "the most CPUs the user's task replicas may hold at once across the network (e.g. 16; default: no limit)")
	maxRunGPU := fs.Int("max-running-gpu", auth.Unlimited, "the most GPUs the user's task replicas may hold at once across the network (default: no limit)")
	maxRunJobs := fs.Int("max-running-jobs", auth.Unlimited, "the most of the user's jobs that may run at once across the network (default: no limit)")
	share := fs.Int("share", 1, "the user's fair share, relative to other users' (1 to 1048576; docs/scheduling.md, \"Fair share\")")
	var sites multiFlag
	fs.Var(&sites, "site", "a site the user's tasks may run at (repeatable; default: any)")
	out := fs.String("out", "", "write the credential here, mode 0600 (default: stdout)")
	valid := validFlag(fs)
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return flagExit(err)
	}
	name, ok := onlyArg("user add", "NAME", pos, stderr)
	if !ok {
		return exitBadUsage
	}
	if !validName(name) {
		fmt.Fprintf(stderr, "agora user add: user name %q: use 1 to 64 letters, digits, '.', '_' or '-'\n", name)
		return exitBadUsage
	}
	q := auth.Quota{MaxCPU: auth.Unlimited, MaxGPU: *maxGPU, MaxPriority: *maxPrio, Sites: sites,
		MaxRunningCPU: auth.Unlimited, MaxRunningGPU: *maxRunGPU, MaxRunningJobs: *maxRunJobs, Share: *share}
	if *share < 1 || *share > auth.MaxShare {
		fmt.Fprintf(stderr, "agora user add: --share %d: out of range 1..%d\n", *share, auth.MaxShare)
		return exitBadUsage
	}
	for _, f := range []struct {
		name, val string
		dst       *int64
	}{{"--max-cpu", *maxCPU, &q.MaxCPU}, {"--max-running-cpu", *maxRunCPU, &q.MaxRunningCPU}} {
		if f.val != "" {
			if *f.dst, err = resource.ParseCPU(f.val); err != nil {
				fmt.Fprintf(stderr, "agora user add: %s: %v\n", f.name, err)
				return exitBadUsage
			}
		}
	}
	if q.MaxGPU < auth.Unlimited || q.MaxPriority < auth.Unlimited || q.MaxRunningGPU < auth.Unlimited || q.MaxRunningJobs < auth.Unlimited {
		fmt.Fprintln(stderr, "agora user add: --max-gpu, --max-priority, --max-running-gpu and --max-running-jobs must be 0 or more")
		return exitBadUsage
	}
	is, _, err := loadIssuer(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "agora user add: %v\n", err)
		return exitBadUsage
	}
	key, err := auth.NewKey(rand.Reader)
	if err != nil {
		fmt.Fprintf(stderr, "agora user add: %v\n", err)
		return exitFailed
	}
	ch, err := is.IssueUser(name, key.Public().(ed25519.PublicKey), *admin, q, time.Now(), *valid, rand.Reader)
	if err != nil {
		fmt.Fprintf(stderr, "agora user add: %v\n", err)
		return exitBadUsage
	}
	if err := outFile(*out, auth.Credential{Key: key, Chain: ch}.PEM(), true, stdout); err != nil {
		fmt.Fprintf(stderr, "agora user add: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// validName checks a user or delegate name.
func validName(s string) bool { return names.TaskName(s) }

func cmdRevoke(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("revoke", stdout, stderr)
	dir := fs.String("authority", "", "sign with this authority directory (or a delegate's)")
	api := apiFlag(fs)
	out := fs.String("out", "", "write the revocation here (default: stdout)")
	asJSON := fs.Bool("json", false, `print {"target": ..., "new": ...} when publishing, {"target": ..., "revocation": PEM} when signing`)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	arg, ok := onlyArg("revoke", "(PEER_ID | user:NAME | delegate:NAME) or FILE", pos, stderr)
	if !ok {
		return exitBadUsage
	}
	switch {
	case *dir != "" && flagWasSet(fs, "api"):
		fmt.Fprintln(stderr, "agora revoke: give --authority (to sign) or --api (to publish), not both")
		return exitBadUsage
	case *dir == "" && !flagWasSet(fs, "api"):
		fmt.Fprintln(stderr, "agora revoke: give --authority DIR to sign a revocation, or --api HOST:PORT FILE to publish one")
		return exitBadUsage
	case *dir == "":
		return publishRevocation(*api, arg, *asJSON, stdout, stderr)
	}
	target, _ := strings.CutPrefix(arg, "node:")
	if name, isUser := strings.CutPrefix(target, auth.UserPrefix); isUser && !validName(name) {
		fmt.Fprintf(stderr, "agora revoke: user name %q is not valid\n", name)
		return exitBadUsage
	}
	is, _, err := loadIssuer(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "agora revoke: %v\n", err)
		return exitBadUsage
	}
	r, err := auth.NewRevocation(target, time.Now(), is.Key, is.Chain)
	if err != nil {
		fmt.Fprintf(stderr, "agora revoke: %v\n", err)
		return exitBadUsage
	}
	if *asJSON && *out == "" {
		printJSON(stdout, map[string]string{"target": target, "revocation": string(r.PEM())})
		return exitOK
	}
	if err := outFile(*out, r.PEM(), false, stdout); err != nil {
		fmt.Fprintf(stderr, "agora revoke: %v\n", err)
		return exitFailed
	}
	if *asJSON {
		printJSON(stdout, map[string]string{"target": target, "file": *out})
	}
	return exitOK
}

// publishRevocation hands a revocation file to a node, which checks it,
// keeps it and spreads it to the network.
func publishRevocation(api, path string, asJSON bool, stdout, stderr io.Writer) int {
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "agora revoke: %v\n", err)
		return exitBadUsage
	}
	r, err := auth.ParseRevocationPEM(b)
	if err != nil {
		fmt.Fprintf(stderr, "agora revoke: %s: %v\n", path, err)
		return exitBadUsage
	}
	var ans struct {
		Target string `json:"target"`
		New    bool   `json:"new"`
	}
	defer func() {
		if asJSON && ans.Target != "" {
			printJSON(stdout, ans)
		}
	}()
	if err := newClient(api).send("POST", "/v1/revocations", "application/octet-stream", r.Encode(), &ans); err != nil {
		fmt.Fprintf(stderr, "agora revoke: %v\n", err)
		if isStatus(err, 400) {
			return exitBadUsage
		}
		return exitFailed
	}
	switch {
	case asJSON:
	case ans.New:
		fmt.Fprintf(stdout, "revoked %s: the node keeps it and tells the network\n", ans.Target)
	default:
		fmt.Fprintf(stdout, "the node already knew the revocation of %s\n", ans.Target)
	}
	return exitOK
}
