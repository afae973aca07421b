#!/usr/bin/env python3
"""scripts/doxygen_filter.py: read a public header's `//` comments as Doxygen documentation.

The headers are written to be read top-down, as Abseil's are: plain `//` comments, a file
comment at the top, a comment directly above each declaration, and one comment above a run
of overloads. Doxygen reads only `///`-style comments, so docs/reference/Doxyfile runs every header
through this filter (INPUT_FILTER), which rewrites the comments in the text Doxygen parses
and leaves the files as they are. It keeps every line where it was, so Doxygen's warnings
point at the real header's lines.

What it rewrites, outside function bodies (a scanner tracks which braces open a namespace, a
class or an enum, and which open code):
  * the file's leading comment block becomes the file's documentation (`\\file`);
  * a comment block directly above a declaration (no blank line between) documents it; a
    block with a `// ----` or `// ====` rule in it is a section heading and stays a comment;
  * when the block is followed by several declarations with no blank line between them (a
    set of overloads, an accessor pair), they become one Doxygen member group that shares
    the block (`@{` ... `@}`, with DISTRIBUTE_GROUP_DOC), unless they are out-of-class
    definitions, or the last one has its own trailing comment and a comment follows at once
    (Doxygen has no good place for the group's end there: each member needs its comment);
  * a comment after a member or an enumerator on its line (`int x;  // ...`), with the
    comment lines aligned under it, documents that member (`///<`).
Text outside `backticks` is escaped, so `<offset>`, `\\r`, `#1` or `50%` read as written.

  python3 scripts/doxygen_filter.py FILE        the filtered text, on stdout
  python3 scripts/doxygen_filter.py --self-test
"""
import re
import sys

_ESCAPE = re.compile(r'([\\<>@#&%$])')
_DOC_START = re.compile(r'^(\s*)//(?!/)( ?)(.*)$')
_SCOPE = re.compile(r'(?<!\w)::')
_RULE = re.compile(r'^\s*//\s*(-{4,}|={4,})')
_NOT_A_DECL = ('#', '}', 'public:', 'private:', 'protected:', '//', 'namespace', 'static_assert',
               'using namespace', 'return', 'if ', 'if(', 'for ', 'while ', 'else', 'case ')


def escape(text):
    """Escapes Doxygen's special characters in text, except inside `code spans`: a `::` that
    does not follow a name (`Result<T>::value()`) would be a link request."""
    parts = text.split('`')
    for i in range(0, len(parts), 2):  # even parts are outside backticks
        parts[i] = _SCOPE.sub(r'\\::', _ESCAPE.sub(r'\\\1', parts[i]))
    return '`'.join(parts)


def skip_literal(text, i):
    """The index just past the string or character literal, or the /* */ comment, that starts
    at text[i]; None when none starts there."""
    n = len(text)
    if text[i] in '"\'':
        q = text[i]
        i += 1
        while i < n and text[i] != q:
            i += 2 if text[i] == '\\' else 1
        return i + 1
    if text.startswith('/*', i):
        end = text.find('*/', i + 2)
        return n if end < 0 else end + 2
    return None


def code_part(line):
    """The line without its trailing // comment, and the column where the comment starts
    (None when it has none). Strings, characters and /* */ comments are skipped."""
    i, n = 0, len(line)
    while i < n:
        past = skip_literal(line, i)
        if past is not None:
            i = past
        elif line.startswith('//', i):
            return line[:i], i
        else:
            i += 1
    return line, None


def strip_template(head):
    """The head without its leading `template <...>` parameter lists."""
    s = head.lstrip()
    while s.startswith('template'):
        i = s.find('<')
        if i < 0:
            return s
        depth = 0
        for j in range(i, len(s)):
            depth += {'<': 1, '>': -1}.get(s[j], 0)
            if depth == 0:
                s = s[j + 1:].lstrip()
                break
        else:
            return s
    return s


class Scopes:
    """The kinds of the braces open at a point of the file: 'ns' (namespace, extern "C"),
    'detail' (namespace detail, not documented), 'body' (a function's or a lambda's body),
    'init' (a braced initializer, `T{1}`),
    'class' (class, struct, union), 'enum', or 'code' (a function body, a lambda, an
    initializer)."""

    def __init__(self):
        self.stack = []
        self.saved = []  # the head at each open brace, for an initializer's
        self.head = ''  # the text since the last ; { or } at this level

    def doc_scope(self):
        """Whether a declaration here is one Doxygen documents: every open brace is a
        namespace or a class."""
        return all(k in ('ns', 'class') for k in self.stack)

    def in_enum(self):
        return bool(self.stack) and self.stack[-1] == 'enum' and all(
            k in ('ns', 'class') for k in self.stack[:-1])

    def depth(self):
        return len(self.stack)

    def feed(self, code, base=None):
        """Advances over one line's code (comments removed). Returns the number of
        declarations that ended at depth `base` (by default, the depth the line starts at):
        a ';' there, or the '}' that closes a function body there (and its ';', if any, is
        the same declaration's)."""
        start = len(self.stack) if base is None else base
        ended = 0
        just_closed = False
        if code.lstrip().startswith('#'):  # a preprocessor line
            return 0
        i, n = 0, len(code)
        while i < n:
            c = code[i]
            past = skip_literal(code, i)
            if past is not None:
                if c != '/':
                    self.head += 'x'  # a literal stands in the head as one token
                i = past
                continue
            if c == '{':
                h = self.head
                if re.search(r'\bnamespace\s+detail\b', h):
                    kind = 'detail'
                elif re.search(r'\bnamespace\b', h) or h.strip() == 'extern':
                    kind = 'ns'
                elif re.search(r'\benum\b', h):
                    kind = 'enum'
                elif re.match(r'\s*(class|struct|union)\b', strip_template(h)) and \
                        '(' not in strip_template(h) and not re.search(r'[=)]\s*$', h.strip()):
                    kind = 'class'
                elif re.search(r'\)[\s\w&]*(->[^;{]*)?$', h.strip()) or re.search(r'\)[\s\w&]*:(?!:)', h):
                    kind = 'body'  # after a parameter list (and qualifiers), or a constructor's initializers
                else:
                    kind = 'init'
                self.stack.append(kind)
                self.saved.append(h)
                self.head = ''
            elif c == '}':
                if self.stack:
                    kind = self.stack.pop()
                    saved = self.saved.pop()
                    # a function body ends its declaration at '}'; a class ends at its ';'
                    if kind == 'body' and len(self.stack) == start:
                        ended += 1
                        just_closed = True
                        self.head = ''
                        i += 1
                        continue
                    if kind == 'init':  # `T{1}` is part of the text around it
                        self.head = saved + '{}'
                        i += 1
                        continue
                self.head = ''
            elif c == ';':
                if len(self.stack) == start and not just_closed:
                    ended += 1
                self.head = ''
            else:
                self.head += c
            if not c.isspace():
                just_closed = False
            i += 1
        self.head += ' '
        return ended


def filter_text(text):
    lines = text.split('\n')
    out = list(lines)
    n = len(lines)

    # The file's comment: every line up to the first that is not a comment.
    i = 0
    while i < n and lines[i].startswith('//'):
        i += 1
    if i > 0:
        for k in range(i):
            out[k] = '///' + escape(lines[k][2:])
        out[i - 1] += ' \\file'

    sc = Scopes()
    closes = {}  # line -> a group's close to put at its start
    while i < n:
        line = lines[i]
        stripped = line.strip()
        m = _DOC_START.match(line)
        if m and sc.doc_scope():
            # A comment block: every comment line at this indentation.
            indent = m.group(1)
            j = i
            while j < n and re.match(r'^' + indent + r'//(?!/)', lines[j]):
                j += 1
            # A rule (`// ---- Section ----`) heads a section: what follows it may document.
            rules = [k for k in range(i, j) if _RULE.match(lines[k])]
            if rules:
                i = rules[-1] + 1
            nxt = lines[j].strip() if j < n else ''
            is_doc = (nxt != '' and (nxt.startswith('#define') or not nxt.startswith(_NOT_A_DECL))
                      and i < j
                      and len(lines[j]) - len(lines[j].lstrip()) == len(indent))
            if is_doc:
                for k in range(i, j):
                    mm = _DOC_START.match(lines[k])
                    out[k] = mm.group(1) + '///' + mm.group(2) + escape(mm.group(3))
                # The run of declarations after it, to the first blank line or comment.
                depth = sc.depth()
                trial = Scopes()
                trial.stack = list(sc.stack)
                decls, last, qualified = 0, None, False
                k = j
                while k < n:
                    s = lines[k].strip()
                    if s == '' or (s.startswith(('//', '}')) and trial.depth() == depth) or \
                            s.startswith(('public:', 'private:', 'protected:', '#')):
                        break
                    code, _ = code_part(lines[k])
                    # Out-of-class definitions of members (`R X<T>::f(`) are documented where
                    # they are declared: such a run is not made a group.
                    # (Not after an '=': `using F = std::function<std::size_t(...)>`.)
                    declarator = code.split('(')[0]
                    if trial.depth() == depth and '=' not in re.sub(r'operator\S*', '', declarator) and \
                            re.search(r'(\w|>)::(~?\w+|operator\S*)\s*$', declarator):
                        qualified = True
                    decls += trial.feed(code, depth)
                    if trial.depth() < depth:
                        break
                    if trial.depth() == depth:
                        last = k
                    k += 1
                if decls >= 2 and last is not None and trial.depth() == depth and not qualified:
                    out[j - 1] += ' @{'
                    code, col = code_part(out[last])
                    if col is None:
                        out[last] += ' ///@}'
                    elif not code.rstrip().endswith(';'):  # a trailing comment that stays a comment
                        out[last] = code + '/**@}*/ ' + out[last][col:]
                    elif k < n and (lines[k].strip() == '' or lines[k].lstrip().startswith(
                            ('}', 'public:', 'private:', 'protected:'))):
                        # After a trailing comment that documents the last member, the group
                        # closes at the start of the line that ended the run.
                        closes[k] = '/**@}*/ '
                    else:
                        # No place to close it that Doxygen reads well (before a comment, the
                        # next declaration's brief would end at its first line): no group, so
                        # each member needs its own comment.
                        out[j - 1] = out[j - 1][:-len(' @{')]
            i = j
            continue
        if not stripped.startswith('//'):
            code, col = code_part(line)
            if col is not None and code.strip() and (sc.in_enum() or (
                    sc.doc_scope() and code.rstrip().endswith(';'))):
                # A trailing comment documents the member; aligned comment lines continue it.
                if not line[col:].startswith('///'):
                    out[i] = code + '///<' + escape(line[col + 2:])
                    k = i + 1
                    while k < n and re.match(r'^ {%d}//(?!/)' % col, lines[k]):
                        out[k] = ' ' * col + '///<' + escape(lines[k][col + 2:])
                        k += 1
                    sc.feed(code)
                    i = k
                    continue
            sc.feed(code)
        i += 1
    for k, close in closes.items():
        out[k] = close + out[k]
    return '\n'.join(out)


def self_test():
    src = '\n'.join([
        '// a.hpp: the file.',
        '//',
        '// Text with <offset> and \\r.',
        '#pragma once',
        'namespace ns {',
        '// ---- a section -----',
        '// C: a class.',
        'class C {',
        ' public:',
        '  // Two overloads.',
        '  void f(int x);',
        '  void f(long x) { (void)x; }  // trailing',
        '',
        '  // One.',
        '  int g() {',
        '    // inside a body',
        '    return 1;',
        '  }',
        '',
        '  int m;  // the member',
        '          // and more',
        '};',
        'enum class E {',
        '  a,  // first',
        '  b = 2,  // second',
        '};',
        'struct D {',
        '  // Overloads whose bodies call qualified names.',
        '  int h(int x) { return std::abs(x); }',
        '  int h(long x) { return static_cast<int>(std::labs(x)); }',
        '',
        '  // A constant with a braced initializer.',
        '  static constexpr long kBig = long{1} << 40;',
        '',
        '  // Equal and not equal, at the end of the class.',
        '  bool operator==(const D&) const;',
        '  bool operator!=(const D&) const;',
        '};',
        '// D::h, defined out of the class.',
        'inline int D::g() { return 1; }',
        'inline int D::g2() { return 2; }',
        '',
        '// The version, as a macro.',
        '#define D_VERSION 1',
        'struct F {',
        '  // A type, and one whose declarator ends in a qualified name.',
        '  using a = int;',
        '  using b = std::function<std::size_t(int)>;',
        '};',
        'struct E {',
        '  // Two flags.',
        '  bool a = false;',
        '  bool b = false;  // the second',
        '  // Calls fn.',
        '  template <class F> int each(F fn) const {',
        '    // inside',
        '    return fn();',
        '  }',
        '};',
        '}  // namespace ns',
    ])
    got = filter_text(src).split('\n')
    want = {
        45: '  /// A type, and one whose declarator ends in a qualified name. @{',
        47: '  using b = std::function<std::size_t(int)>; ///@}',
        0: '/// a.hpp: the file.',
        2: '/// Text with \\<offset\\> and \\\\r. \\file',
        5: '// ---- a section -----',
        6: '/// C: a class.',
        9: '  /// Two overloads. @{',
        11: '  void f(long x) { (void)x; }  /**@}*/ // trailing',
        12: '',
        13: '  /// One.',
        15: '    // inside a body',
        19: '  int m;  ///< the member',
        20: '          ///< and more',
        23: '  a,  ///< first',
        24: '  b = 2,  ///< second',
        27: '  /// Overloads whose bodies call qualified names. @{',
        29: '  int h(long x) { return static_cast<int>(std::labs(x)); } ///@}',
        31: '  /// A constant with a braced initializer.',
        34: '  /// Equal and not equal, at the end of the class. @{',
        36: '  bool operator!=(const D&) const; ///@}',
        38: '/// D::h, defined out of the class.',
        40: 'inline int D::g2() { return 2; }',
        42: '/// The version, as a macro.',
        50: '  /// Two flags. @{',
        52: '  bool b = false;  ///< the second',
        50: '  /// Two flags.',
        53: '  /// Calls fn.',
        55: '    // inside',
        59: '}  // namespace ns',
    }
    bad = 0
    if len(got) != len(src.split('\n')):
        print('self-test: the line count changed')
        bad += 1
    for k, w in want.items():
        if k >= len(got) or got[k] != w:
            print('self-test: line %d: got %r, want %r' % (k + 1, got[k] if k < len(got) else None, w))
            bad += 1
    if escape('a `<b>` <c>::d') != 'a `<b>` \\<c\\>\\::d':
        print('self-test: escape')
        bad += 1
    print('self-test: %s' % ('ok' if bad == 0 else '%d failures' % bad))
    return 1 if bad else 0


if __name__ == '__main__':
    if len(sys.argv) == 2 and sys.argv[1] == '--self-test':
        sys.exit(self_test())
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding='utf-8') as f:
        sys.stdout.write(filter_text(f.read()))
