package predict

import (
	"container/list"
	"time"
)

// Runtime predicts task runtimes per job type from the runtimes observed
// so far. The zero value is not usable; create one with NewRuntime. A
// Runtime is not safe for concurrent use.
type Runtime struct {
	cfg   RuntimeConfig
	types map[string]*list.Element // values are *typeStats
	order *list.List               // front is the least recently updated
}

// NewRuntime returns an empty Runtime configured by cfg, with unset fields
// defaulted.
func NewRuntime(cfg RuntimeConfig) *Runtime {
	return &Runtime{
		cfg:   cfg.withDefaults(),
		types: make(map[string]*list.Element),
		order: list.New(),
	}
}

// Config returns the configuration in effect, defaults applied.
func (r *Runtime) Config() RuntimeConfig { return r.cfg }

// Len returns the number of job types tracked.
func (r *Runtime) Len() int { return len(r.types) }

// Observe records that a task of jobType ran for runtime. Non-positive
// runtimes are ignored. Observing a type not yet tracked when MaxTypes
// types are tracked evicts the least recently updated type.
func (r *Runtime) Observe(jobType string, runtime time.Duration) {
	if runtime <= 0 {
		return
	}
	s := r.touch(jobType)
	s.observe(runtime.Seconds(), r.cfg.Alpha)
}

// Predict predicts the runtime of a task of jobType whose user estimate is
// estimate (zero or negative for none). History is used once the type has
// MinSamples samples; before that the estimate is used when given, then
// any history, and Default only when there is neither.
func (r *Runtime) Predict(jobType string, estimate time.Duration) Prediction {
	var s *typeStats
	if e, ok := r.types[jobType]; ok {
		s = e.Value.(*typeStats)
	}
	switch {
	case s != nil && s.n >= r.cfg.MinSamples:
		return s.prediction()
	case estimate > 0:
		return Prediction{Runtime: estimate, Samples: s.samples(), Source: SourceEstimate}
	case s != nil:
		return s.prediction()
	default:
		return Prediction{Runtime: r.cfg.Default, Source: SourceDefault}
	}
}

// touch returns the stats of jobType, creating them (and evicting the least
// recently updated type if full), and marks them most recently updated.
func (r *Runtime) touch(jobType string) *typeStats {
	if e, ok := r.types[jobType]; ok {
		r.order.MoveToBack(e)
		return e.Value.(*typeStats)
	}
	for len(r.types) >= r.cfg.MaxTypes {
		oldest := r.order.Front()
		delete(r.types, oldest.Value.(*typeStats).name)
		r.order.Remove(oldest)
	}
	s := &typeStats{name: jobType}
	r.types[jobType] = r.order.PushBack(s)
	return s
}
