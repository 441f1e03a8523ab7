# SPDX-License-Identifier: BSD-2-Clause
# gen_conf_keys.awk: a module's configuration key table (ph_conf_key,
# sdk/proxyhost/config.h) from the [<module>] section of its .ini.sample,
# so that the sample is the one place a key is declared. POSIX awk.
#
#   awk -f tools/gen_conf_keys.awk [-v section=NAME] [-v table=keys] \
#       modules/NAME/NAME.ini.sample >NAME_keys.c
#
# section defaults to the file's name without .ini.sample; table (the C
# name of the array, which the module declares extern) to "keys".
#
# The section may be left out as a whole ("; [NAME]" alone on its line,
# for a drop-in commented out until it is set up). In the section, every
# key line ("key = value", or "; key = value" for one left out) has right
# above it one line
#
#   ; type: TYPE [LO..HI][, ATTR]...
#
#   TYPE   string | int | bool | duration | size | list | enum A|B|C
#   LO..HI the bounds: a string's length in bytes, an int's value, a
#          duration (ms, s, m, h: "50ms..1h"), a size (bytes, KiB, MiB,
#          GiB), a list's count; HI left out ("1..") is unbounded
#   ATTR   restart (read at start only) or reloadable: one of the two;
#          required (no default: start-up fails unless it is set);
#          secret (redacted in --print-config and errors);
#          example (the value shown is an example: the default is empty);
#          localstatedir (the value's leading /var is the build's
#          localstatedir); env NAME (a legacy environment name);
#          flag -NAME (a command-line name)
#
# The default is the key line's value. A key declared on a commented
# line may be set once further down by a live line without a type line:
# the sample's own setting (tls.mode = disabled where the default is
# mtls), which the table does not see. The C help line is the first
# sentence of the prose comment above the type line (an unset prose, as
# for the second of two keys one comment describes, keeps the previous
# key's), or the text of a "; help: ..." line where that reads badly.
# Anything this script cannot read stops it with "FILE:LINE: reason" and
# exit status 1, so that a wrong line fails the build.
#
# Keys several modules share (a frontend's, a tunnel session's, a gRPC
# channel's) are declared once in a group file, NAME.keys beside the code
# that reads them: "; type:" and "key = default" line pairs as in a
# sample, no prose. -v groups="FILE[=PREFIX] ..." holds the sample to
# each group: every key of the group must be in the section with the
# group's type line and default, or the build stops. In a group file a
# leading "@" in a key's name stands for PREFIX (the tunnel roles' keys
# differ by "stream." and "streams."), and a default "*" lets each
# module choose its own (a frontend's listen address). With -v complete=1
# (a unit test's table of a group's keys) the groups' keys the sample does
# not write out are added, with the groups' defaults.

function fail(msg) {
  if (group_file != "")
    printf "%s: %s\n", group_file, msg > "/dev/stderr"
  else
    printf "%s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"
  failed = 1
  exit 1
}

function trim(s) {
  sub(/^[ \t]+/, "", s)
  sub(/[ \t]+$/, "", s)
  return s
}

function cstr(s) {
  gsub(/\\/, "\\\\", s)
  gsub(/"/, "\\\"", s)
  return "\"" s "\""
}

# A bound as the C integer of the table: durations in ms, sizes in bytes.
function bound(v, type,   num, unit, mul) {
  v = trim(v)
  if (v !~ /^-?[0-9]+[A-Za-z]*$/)
    fail("bad bound \"" v "\"")
  num = v
  sub(/[A-Za-z]+$/, "", num)
  unit = substr(v, length(num) + 1)
  if (unit == "")
    return num
  mul = 0
  if (type == "duration") {
    if (unit == "ms") mul = 1
    else if (unit == "s") mul = 1000
    else if (unit == "m") mul = 60000
    else if (unit == "h") mul = 3600000
  } else if (type == "size") {
    if (unit == "KiB") mul = 1024
    else if (unit == "MiB") mul = 1048576
    else if (unit == "GiB") mul = 1073741824
  }
  if (!mul)
    fail("bad unit \"" unit "\" for a " type)
  return sprintf("%.0f", num * mul)
}

function first_sentence(s,   i) {
  s = trim(s)
  i = index(s, ". ")
  if (i)
    s = substr(s, 1, i - 1)
  sub(/\.$/, "", s)
  return s
}

function read_type(spec,   n, part, i, words, cut, range, lo_hi) {
  n = split(spec, part, ",")
  split(trim(part[1]), words, " ")
  k_type = words[1]
  range = words[2]
  k_choices = "NULL"
  if (k_type == "enum") {
    if (range !~ /^[a-z0-9_.-]+(\|[a-z0-9_.-]+)*$/)
      fail("an enum needs its values: enum a|b|c")
    k_choices = cstr(range)
    range = ""
  } else if (k_type !~ /^(string|int|bool|duration|size|list)$/)
    fail("unknown type \"" k_type "\"")
  if (words[3] != "")
    fail("\"" trim(part[1]) "\": TYPE [LO..HI], then attributes after commas")
  k_min = 0
  k_max = 0
  if (range != "") {
    cut = index(range, "..")
    if (!cut || k_type == "bool")
      fail("bad range \"" range "\"")
    k_min = bound(substr(range, 1, cut - 1), k_type)
    lo_hi = substr(range, cut + 2)
    if (lo_hi != "")
      k_max = bound(lo_hi, k_type)
  }
  k_flags = ""
  k_env = "NULL"
  k_flag = ""
  k_example = 0
  k_lsd = 0
  k_when = 0
  for (i = 2; i <= n; i++) {
    part[i] = trim(part[i])
    if (part[i] == "restart") {
      k_flags = k_flags " | PH_CONF_RESTART"
      k_when++
    } else if (part[i] == "reloadable")
      k_when++
    else if (part[i] == "required")
      k_flags = k_flags " | PH_CONF_REQUIRED"
    else if (part[i] == "secret")
      k_flags = k_flags " | PH_CONF_SENSITIVE"
    else if (part[i] == "example")
      k_example = 1
    else if (part[i] == "localstatedir")
      k_lsd = 1
    else if (part[i] ~ /^env [A-Z][A-Z0-9_]*$/)
      k_env = cstr(substr(part[i], 5))
    else if (part[i] ~ /^flag -[a-z][a-z0-9-]+$/)
      k_flag = substr(part[i], 7)
    else
      fail("unknown attribute \"" part[i] "\"")
  }
  if (k_when != 1)
    fail("say exactly one of restart and reloadable")
  k_flags = (k_flags == "") ? "0" : substr(k_flags, 4)
  have_type = 1
}

# What a type line means, to compare a sample's with its group's however
# each spells it ("1MiB" or "1048576").
function signature() {
  return k_type "|" k_min "|" k_max "|" k_flags "|" k_env "|" k_flag "|" \
         k_choices "|" k_example "|" k_lsd
}

# Read the group files named in -v groups into g_type, g_value, g_file.
function read_groups(   n, spec, i, file, prefix, eq, line, t, name, val, r) {
  n = split(groups, spec, " ")
  for (i = 1; i <= n; i++) {
    file = spec[i]
    prefix = ""
    eq = index(file, "=")
    if (eq) {
      prefix = substr(file, eq + 1)
      file = substr(file, 1, eq - 1)
    }
    t = ""
    while ((r = (getline line < file)) > 0) {
      if (line ~ /^;[ \t]*type:/) {
        t = line
        sub(/^;[ \t]*type:/, "", t)
        t = trim(t)
      } else if (line ~ /^@?[a-z][a-z0-9_.-]*[ \t]*=/) {
        if (t == "")
          gfail(file, "key line with no \"; type:\" line above it")
        eq = index(line, "=")
        name = trim(substr(line, 1, eq - 1))
        val = trim(substr(line, eq + 1))
        if (name ~ /^@/)
          name = prefix substr(name, 2)
        group_file = file
        read_type(t)
        group_file = ""
        have_type = 0
        if (!(name in g_type))
          g_order[++g_count] = name
        g_type[name] = t
        g_sig[name] = signature()
        g_value[name] = val
        g_file[name] = file
        t = ""
      } else if (line !~ /^[ \t]*(#.*)?$/)
        gfail(file, "cannot read \"" line "\"")
    }
    if (r < 0)
      gfail(file, "cannot read this group file")
    close(file)
  }
}

function gfail(file, msg) {
  group_file = file
  fail(msg)
}

function emit_key(name, value,   def, help, tail) {
  if (!have_type)
    fail("key " name " has no \"; type:\" line right above it")
  if (name in seen)
    fail("key " name " twice")
  seen[name] = 1
  if (name in g_type) {
    if (signature() != g_sig[name])
      fail("key " name ": \"type: " trim(k_spec) "\" but its group " \
           g_file[name] " says \"type: " g_type[name] "\"")
    if (g_value[name] != "*" && value != g_value[name])
      fail("key " name ": default \"" value "\" but its group " \
           g_file[name] " says \"" g_value[name] "\"")
  }
  if (k_flags ~ /REQUIRED/)
    def = "NULL"
  else if (k_example)
    def = "\"\""
  else if (k_lsd) {
    if (value !~ /^\/var\//)
      fail("localstatedir: the value must start with /var/")
    def = "PH_LOCALSTATEDIR " cstr(substr(value, 5))
    uses_lsd = 1
  } else
    def = cstr(value)
  if (help_line != "")
    help = help_line
  else if (prose != "")
    help = first_sentence(prose)
  else if (last_help != "")
    help = last_help
  else
    fail("key " name " has no prose above it for its help")
  last_help = help
  tail = cstr(name) ", PH_CONF_" toupper(k_type) ", " def ", " k_min ", " \
         k_max ", " k_flags ", " k_env ", " cstr(help) ", " k_choices ")"
  nkeys++
  if (k_flag != "")
    out[nkeys] = "    PH_CONF_KEY_FLAG(" cstr(k_flag) ", " tail
  else
    out[nkeys] = "    PH_CONF_KEY(" tail
  have_type = 0
  prose = ""
  help_line = ""
}

BEGIN {
  if (table == "")
    table = "keys"
  if (groups != "")
    read_groups()
}

FNR == 1 && section == "" {
  section = FILENAME
  sub(/^.*\//, "", section)
  sub(/\.ini\.sample$/, "", section)
}

# A section header, or one left out ("; [name]" alone on its line: a
# drop-in whose every line is commented out until the operator sets it up).
/^\[/ || /^;[ \t]*\[[a-z0-9_.]+\][ \t]*$/ {
  if (in_section && have_type)
    fail("a \"; type:\" line with no key below it")
  s = $0
  sub(/^;[ \t]*/, "", s)
  in_section = (trim(s) == "[" section "]")
  if (in_section)
    found = 1
  next
}

!in_section { next }

/^;[ \t]*type:/ {
  if (have_type)
    fail("two \"; type:\" lines for one key")
  s = $0
  sub(/^;[ \t]*type:/, "", s)
  k_spec = s
  read_type(trim(s))
  next
}

/^;[ \t]*help:/ {
  s = $0
  sub(/^;[ \t]*help:/, "", s)
  help_line = trim(s)
  next
}

/^(;[ \t]*)?[a-z][a-z0-9_.-]*[ \t]*=/ && (have_type || $0 !~ /^;/) {
  s = $0
  sub(/^;[ \t]*/, "", s)
  eq = index(s, "=")
  name = trim(substr(s, 1, eq - 1))
  # The sample's own setting of a key declared above on a commented line.
  if (!have_type && (name in seen)) {
    if (!(name in left_out) || (name in set_below))
      fail("key " name " twice")
    set_below[name] = 1
    next
  }
  if ($0 ~ /^;/)
    left_out[name] = 1
  emit_key(name, trim(substr(s, eq + 1)))
  next
}

/^;/ {
  if (have_type)
    fail("prose between a \"; type:\" line and its key")
  s = $0
  sub(/^;[ \t]*/, "", s)
  prose = (prose == "") ? s : prose " " s
  next
}

/^[ \t]*$/ { next }

{ fail("cannot read this line") }

END {
  if (failed)
    exit 1
  if (!found) {
    printf "%s: no [%s] section\n", FILENAME, section > "/dev/stderr"
    exit 1
  }
  if (have_type) {
    printf "%s: a \"; type:\" line with no key below it\n", FILENAME \
      > "/dev/stderr"
    exit 1
  }
  # -v complete=1 (a test's table): the groups' keys the sample lacks are
  # added with the groups' defaults, in the groups' order.
  for (i = 1; complete && i <= g_count; i++) {
    name = g_order[i]
    if (name in seen)
      continue
    group_file = g_file[name]
    read_type(g_type[name])
    if (g_value[name] == "*" && !k_example)
      fail("key " name " has no default here: the sample must write it out")
    group_file = ""
    help_line = g_file[name]
    sub(/^.*\//, "", help_line)
    help_line = "a key of " help_line
    emit_key(name, g_value[name])
  }
  for (name in g_type)
    if (!(name in seen)) {
      printf "%s: [%s] lacks key %s of its group %s\n", FILENAME, section, \
        name, g_file[name] > "/dev/stderr"
      exit 1
    }
  src = FILENAME
  sub(/^.*\//, "", src)
  # The licence line first: in an in-tree build this file sits in the
  # source tree, where every .c carries it (t/integration/licence.sh).
  print "/* SPDX-License-Identifier: BSD-2-Clause */"
  print "/* Generated from " src " by tools/gen_conf_keys.awk: edit the"
  print " * sample, not this file. */"
  print "#include <stddef.h>"
  print ""
  print "#include <proxyhost/config.h>"
  if (uses_lsd) {
    print ""
    print "#ifndef PH_LOCALSTATEDIR"
    print "#define PH_LOCALSTATEDIR \"/var\""
    print "#endif"
  }
  print ""
  print "extern const ph_conf_key " table "[];"
  print "const ph_conf_key " table "[] = {"
  for (i = 1; i <= nkeys; i++)
    print out[i] ","
  print "    PH_CONF_END};"
}
