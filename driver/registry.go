package driver

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"
)

var (
	driversMu sync.RWMutex
	drivers   = make(map[string]Driver)
)

// Register makes a driver available under name to [Open]. Engines call it
// from init (importing github.com/shaledb/shale/engine registers "shale").
// It panics if d is nil or if name is already registered, as sql.Register
// does: both are programming errors that must surface at start-up.
func Register(name string, d Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if d == nil {
		panic("driver: Register driver is nil for name " + strconv.Quote(name))
	}
	if _, dup := drivers[name]; dup {
		panic("driver: Register called twice for driver " + strconv.Quote(name))
	}
	drivers[name] = d
}

// Drivers returns the names of the registered drivers, sorted.
func Drivers() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	return slices.Sorted(maps.Keys(drivers))
}

// Open opens the database named by dsn with the driver registered as
// driverName. An unknown name is an error matching ErrInvalidArgument that
// names it. If the driver implements [DriverContext], Open parses dsn at
// once with OpenConnector and returns its error; otherwise it returns
// OpenDB with a Connector that calls Driver.Open(dsn).
//
// Like [OpenDB], Open does not open the database files: the first call does
// (use [DB.Ping] to open them eagerly).
func Open(driverName, dsn string) (*DB, error) {
	driversMu.RLock()
	d, ok := drivers[driverName]
	driversMu.RUnlock()
	if !ok {
		return nil, invalidArgument("driver: unknown driver " + strconv.Quote(driverName) + " (forgotten import?)")
	}
	if dc, ok := d.(DriverContext); ok {
		c, err := dc.OpenConnector(dsn)
		if err != nil {
			return nil, err
		}
		return OpenDB(c), nil
	}
	return OpenDB(dsnConnector{dsn: dsn, driver: d}), nil
}

// dsnConnector is the Connector of a Driver without DriverContext.
type dsnConnector struct {
	dsn    string
	driver Driver
}

func (c dsnConnector) Connect(context.Context) (DriverConn, error) { return c.driver.Open(c.dsn) }
func (c dsnConnector) Driver() Driver                              { return c.driver }
