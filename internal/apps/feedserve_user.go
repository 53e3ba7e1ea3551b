package apps

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/cmdkit"
)

// userCommand is feed-serve user: the users of the Google Reader API.
func userCommand() *cli.Command {
	return &cli.Command{
		Name:  "user",
		Usage: "the users of the Google Reader API (/accounts/ClientLogin, /reader/api/0/...: for reader apps; off until a user exists): add, passwd, role, remove, list",
		UsageText: `feed-serve user add NAME [--admin]   (the password from stdin, or asked twice on a terminal)
   feed-serve user passwd NAME
   feed-serve user role NAME admin|reader
   feed-serve user remove NAME
   feed-serve user list
   printf '%s\n' "$PASSWORD" | feed-serve user add alice`,
		Description: `The Google Reader API of feed-serve (/accounts/ClientLogin, /reader/api/0/...,
for reader apps: newsboat, Reeder, NetNewsWire, FeedMe...) is off until a
user exists. A user's name is also their reader name: the entries they
mark read or starred in an app are read or starred for feed-read --reader
NAME and the REST API's ?reader=NAME, and they may sign in to the web page.
A user is a reader (reads and marks) unless made an admin, who may also
change the subscriptions through the API (quickadd, unsubscribe, rename,
labels). A password has at least 12 characters; it is kept in the catalog as
a PBKDF2-SHA256 hash (600,000 rounds); passwd and remove end the user's
sessions, so every app logs in again.`,
		Subcommands: []*cli.Command{
			{Name: "add", ArgsUsage: "NAME", Usage: "add a user, a reader unless --admin; the password is read from stdin, or asked twice on a terminal",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "admin", Usage: "the user may change the subscriptions through the API, not only read and mark"}},
				Action: func(c *cli.Context) error {
					return withUser(c, func(cat *catalog.Catalog, name string) error {
						pw, err := readPassword(c)
						if err != nil {
							return err
						}
						role := catalog.RoleReader
						if c.Bool("admin") {
							role = catalog.RoleAdmin
						}
						if err := cat.AddUser(c.Context, name, pw, role, time.Now()); err != nil {
							return cmdkit.UsageIf(err, catalog.ErrUserExists, catalog.ErrBadReader, catalog.ErrWeakPassword)
						}
						fmt.Fprintf(c.App.ErrWriter, "feed-serve: added user %s (%s): the Google Reader API is on (POST /accounts/ClientLogin)\n", name, role)
						return nil
					})
				}},
			{Name: "role", ArgsUsage: "NAME admin|reader", Usage: "make a user an admin (may change the subscriptions) or a reader (reads and marks)",
				Action: func(c *cli.Context) error {
					if c.NArg() != 2 {
						return cmdkit.Usagef("user role takes NAME and a role (admin or reader), got %d arguments", c.NArg())
					}
					cat, done, err := openCatalog(c)
					if err != nil {
						return err
					}
					defer done()
					return cmdkit.UsageIf(cat.SetRole(c.Context, c.Args().Get(0), c.Args().Get(1)), catalog.ErrNoSuchUser, catalog.ErrBadRole)
				}},
			{Name: "passwd", ArgsUsage: "NAME", Usage: "change a user's password (read as add reads it); their sessions end",
				Action: func(c *cli.Context) error {
					return withUser(c, func(cat *catalog.Catalog, name string) error {
						pw, err := readPassword(c)
						if err != nil {
							return err
						}
						return cmdkit.UsageIf(cat.SetPassword(c.Context, name, pw), catalog.ErrNoSuchUser, catalog.ErrWeakPassword)
					})
				}},
			{Name: "remove", ArgsUsage: "NAME", Usage: "remove a user and their sessions (their marks stay, as a reader's)",
				Action: func(c *cli.Context) error {
					return withUser(c, func(cat *catalog.Catalog, name string) error {
						return cmdkit.UsageIf(cat.RemoveUser(c.Context, name), catalog.ErrNoSuchUser)
					})
				}},
			{Name: "list", Aliases: []string{"ls"}, Usage: "list the users: name, role and when added, a line each",
				Action: func(c *cli.Context) error {
					if c.NArg() != 0 {
						return cmdkit.Usagef("user list takes no arguments")
					}
					cat, done, err := openCatalog(c)
					if err != nil {
						return err
					}
					defer done()
					users, err := cat.Users(c.Context)
					if err != nil {
						return err
					}
					out := bufio.NewWriter(c.App.Writer)
					for _, u := range users {
						fmt.Fprintf(out, "%s\t%s\t%s\n", u.Name, u.Role, u.Created.Format(time.RFC3339))
					}
					return out.Flush()
				}},
		},
	}
}

// withUser runs fn on the catalog with the one NAME argument.
func withUser(c *cli.Context, fn func(*catalog.Catalog, string) error) error {
	if c.NArg() != 1 {
		return cmdkit.Usagef("user %s takes one NAME, got %d arguments", c.Command.Name, c.NArg())
	}
	cat, done, err := openCatalog(c)
	if err != nil {
		return err
	}
	defer done()
	return fn(cat, c.Args().First())
}

func openCatalog(c *cli.Context) (*catalog.Catalog, func(), error) {
	log, st, err := cmdkit.Setup(c, cmdkit.ReadOnly)
	if err != nil {
		return nil, nil, err
	}
	cat, err := catalog.Open(c.Context, st, log)
	if err != nil {
		return nil, nil, err
	}
	return cat, func() { cat.Close() }, nil
}

// readPassword reads a password: asked twice, without echo, when stdin is
// a terminal; else the first line of stdin (its line end dropped).
func readPassword(c *cli.Context) (string, error) {
	if f, ok := c.App.Reader.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		var pw [2]string
		for i, prompt := range []string{"Password: ", "Again: "} {
			fmt.Fprint(c.App.ErrWriter, prompt)
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(c.App.ErrWriter)
			if err != nil {
				return "", fmt.Errorf("read the password: %w", err)
			}
			pw[i] = string(b)
		}
		if pw[0] != pw[1] {
			return "", cmdkit.Usagef("the passwords differ: nothing changed")
		}
		return pw[0], nil
	}
	r := bufio.NewReader(io.LimitReader(c.App.Reader, catalog.MaxPasswordBytes+2))
	line, err := r.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return "", cmdkit.Usagef("no password on stdin: give it as its first line (printf '%%s\\n' \"$PASSWORD\" | feed-serve user add NAME)")
	}
	return line, nil
}
