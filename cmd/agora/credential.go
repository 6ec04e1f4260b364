package main

import (
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/node/api"
)

// In a network with an authority every client request is signed with the
// user's credential (agora user add): a submission becomes a ticket (the
// spec parsed here and signed in canonical form), any other request carries a token naming what
// it asks and of which job (api.CredentialHeader).

// credential is the credential this command signs with; nil: none.
var credential *auth.Credential

// credentialFlag registers --credential on fs.
func credentialFlag(fs *flag.FlagSet) *string {
	return fs.String("credential", "", "sign requests with this credential file (agora user add; default $AGORA_CREDENTIAL)")
}

// loadCredential reads the credential named by the flag or
// $AGORA_CREDENTIAL; a bad file is bad usage.
func loadCredential(path, cmd string, stderr io.Writer) int {
	credential = nil
	if path == "" {
		path = os.Getenv("AGORA_CREDENTIAL")
	}
	if path == "" {
		return exitOK
	}
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "agora %s: credential: %v\n", cmd, err)
		return exitBadUsage
	}
	c, err := auth.ParseCredential(b)
	if err != nil {
		fmt.Fprintf(stderr, "agora %s: credential %s: %v\n", cmd, path, err)
		return exitBadUsage
	}
	credential = &c
	if left := time.Until(c.Chain.Expiry()); left <= 0 {
		fmt.Fprintf(stderr, "agora %s: warning: credential %s expired at %s: ask your administrator for agora user renew\n", cmd, path, c.Chain.Expiry().UTC().Format(time.RFC3339))
	} else if left < auth.RenewWarning {
		fmt.Fprintf(stderr, "agora %s: warning: credential %s expires in %s (%s): ask your administrator for agora user renew\n", cmd, path, roundDays(left), c.Chain.Expiry().UTC().Format(time.RFC3339))
	}
	return exitOK
}

// roundDays is d as "3 days" or, under one, "5h0m0s".
func roundDays(d time.Duration) string {
	if days := int(d / (24 * time.Hour)); days >= 1 {
		return fmt.Sprintf("%d days", days)
	}
	return d.Round(time.Minute).String()
}

// sign turns a request into its signed form (api.Sign) with the
// command's credential.
func sign(method, path, ctype string, body []byte) (api.Signed, error) {
	return api.Sign(credential, method, path, ctype, body, time.Now(), rand.Reader)
}
