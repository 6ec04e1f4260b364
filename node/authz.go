package node

import (
	"context"
	"fmt"

	"github.com/agora-sched/agora/market"
	"github.com/agora-sched/agora/market/auth"
	"github.com/agora-sched/agora/node/api"
)

// Who may do what (market/auth.Allow) is decided where the job's data is:
// the node that manages a job answers for its record, the node that ran
// an attempt for its log, each checking the user's signed request, which
// the asking node forwards in its query. In an open network everyone may
// do everything.

// errNoCredential is a request without a credential to a node with an
// authority.
var errNoCredential = fmt.Errorf("%w: this network needs a credential: give --credential FILE (or set $AGORA_CREDENTIAL)", api.ErrForbidden)

// authorize checks a request's credential cred about job, owned by
// owner: its signature and freshness (naming one of acts when given),
// and that its user may do what it names. It returns the user (zero in
// an open network).
func (n *Node) authorize(cred []byte, job, owner string, acts ...auth.Action) (auth.Identity, error) {
	if n.trust == nil {
		return auth.Identity{}, nil
	}
	if len(cred) == 0 {
		return auth.Identity{}, errNoCredential
	}
	id, act, err := n.trust.adm.VerifyToken(cred, job, acts...)
	if err != nil {
		n.countRefused("bad_credential")
		return auth.Identity{}, fmt.Errorf("%w: %v", api.ErrForbidden, err)
	}
	if act == auth.ActSession { // a dashboard session: the read asked
		act = auth.ActStatus
		if len(acts) > 0 {
			act = acts[0]
		}
	}
	if err := auth.Allow(act, id, owner); err != nil {
		n.countRefused("not_allowed")
		return id, fmt.Errorf("%w: %v", api.ErrForbidden, err)
	}
	return id, nil
}

// SignIn implements api.Backend.
func (n *Node) SignIn(ctx context.Context) (string, error) {
	if n.trust == nil {
		return "", nil
	}
	cred := api.Credential(ctx)
	if len(cred) == 0 {
		return "", errNoCredential
	}
	id, err := n.trust.adm.VerifySession(cred, n.ID().String())
	if err != nil {
		n.countRefused("bad_credential")
		return "", fmt.Errorf("%w: %v", api.ErrForbidden, err)
	}
	return id.Name, nil
}

// Authorize implements api.Backend.
func (n *Node) Authorize(ctx context.Context, act auth.Action) error {
	_, err := n.authorize(api.Credential(ctx), "", "", act)
	return err
}

// visible is a job record as a caller may see it: whole for its owner
// and admins (and everyone in an open network), else its summary and
// an error wrapping api.ErrForbidden; nothing at all without a
// credential in a network with an authority.
func (n *Node) visible(cred []byte, j market.JobRecord) (market.JobRecord, error) {
	if n.trust != nil && len(cred) == 0 {
		return market.JobRecord{}, errNoCredential
	}
	if _, err := n.authorize(cred, j.ID, j.Owner); err != nil {
		return j.Summary(), err
	}
	return j, nil
}

// logAllowed is the executor's check that a caller may read a log.
func (n *Node) logAllowed(cred []byte, job string) func(owner string) error {
	if n.trust == nil {
		return nil
	}
	return func(owner string) error {
		_, err := n.authorize(cred, job, owner, auth.ActLogs)
		return err
	}
}

// mayList is whether a caller may list jobs, and which: its own, or
// every one for an admin (and in an open network).
func (n *Node) mayList(ctx context.Context) (func(market.JobRecord) bool, error) {
	if n.trust == nil {
		return func(market.JobRecord) bool { return true }, nil
	}
	id, err := n.authorize(api.Credential(ctx), "", "", auth.ActJobs)
	if err != nil {
		return nil, err
	}
	return func(j market.JobRecord) bool { return id.Admin || j.Owner == id.Name }, nil
}
