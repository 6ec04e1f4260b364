package wire

import (
	"maps"
	"slices"

	"github.com/agora-sched/agora/market/names"
)

// The checks of labels and owners, and their helpers.

// checkLabels checks label constraints.
func checkLabels(p string, labels map[string]string) error {
	if len(labels) > MaxLabels {
		return bad(p, "%d labels, over the limit of %d", len(labels), MaxLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		kp := keyPath(p, k)
		if !names.LabelKey(k) {
			return bad(kp, "invalid label key: want 1 to %d letters, digits, '_', '.', '/' or '-'", MaxLabelKeyLen)
		}
		if err := checkText(kp, labels[k], MaxLabelValueLen, false); err != nil {
			return err
		}
	}
	return nil
}

// checkOwner checks a user name: empty, or a name as agora user add takes.
func checkOwner(p, s string) error {
	if s != "" && !names.TaskName(s) {
		return bad(p, "%s is not a user name", show(s))
	}
	return nil
}
