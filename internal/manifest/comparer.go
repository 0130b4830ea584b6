package manifest

import "github.com/shaledb/shale/internal/base"

// Option configures a VersionSet made by Create, New, Load, Recover or
// RecoverReadOnly.
type Option func(*VersionSet)

// WithComparer sets the database's key order: versions order their files
// by it; Create and Start record its name in the new MANIFEST's first edit
// unless it is bytewise (a MANIFEST without a name is bytewise, as every
// MANIFEST written before names were recorded); and Load fails, with an
// error marked base.ErrInvalidArgument naming both, when the MANIFEST
// records another name. nil is bytewise.
func WithComparer(c *base.Comparer) Option {
	return func(vs *VersionSet) {
		if c != nil {
			vs.comparer = c
		}
	}
}

// ComparerName returns the name of the VersionSet's key order.
func (vs *VersionSet) ComparerName() string { return vs.comparer.Name }

// checkComparer compares the comparer name the MANIFEST records (empty:
// none, bytewise) with the VersionSet's.
func (vs *VersionSet) checkComparer(manifest, recorded string) error {
	if recorded == "" {
		recorded = base.BytewiseName
	}
	if recorded != vs.comparer.Name {
		return base.InvalidArgumentf("manifest: %s: the database's keys are ordered by comparer %q, but it is opened with comparer %q",
			manifest, recorded, vs.comparer.Name)
	}
	return nil
}
