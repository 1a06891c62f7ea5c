; PHP tags. Captures: @name.definition.<kind>, @name.reference.<kind>, @import, @import.dir.

; ---- definitions
(namespace_definition
  name: (namespace_name) @name.definition.module)

(class_declaration
  name: (name) @name.definition.class)

(interface_declaration
  name: (name) @name.definition.interface)

(trait_declaration
  name: (name) @name.definition.trait)

(enum_declaration
  name: (name) @name.definition.enum)

(function_definition
  name: (name) @name.definition.function)

(method_declaration
  name: (name) @name.definition.method)

(const_declaration
  (const_element (name) @name.definition.constant))

; ---- references
(function_call_expression
  function: [
    (name) @name.reference.call
    (qualified_name (name) @name.reference.call .)
  ])

[
  (member_call_expression name: (name) @name.reference.call)
  (nullsafe_member_call_expression name: (name) @name.reference.call)
  (scoped_call_expression name: (name) @name.reference.call)
]

(scoped_call_expression
  scope: [
    (name) @name.reference.class
    (qualified_name (name) @name.reference.class .)
  ])

(object_creation_expression
  [
    (name) @name.reference.class
    (qualified_name (name) @name.reference.class .)
  ])

[
  (base_clause [(name) @name.reference.class (qualified_name (name) @name.reference.class .)])
  (class_interface_clause [(name) @name.reference.class (qualified_name (name) @name.reference.class .)])
  (use_declaration [(name) @name.reference.class (qualified_name (name) @name.reference.class .)])
]

(named_type
  [
    (name) @name.reference.type
    (qualified_name (name) @name.reference.type .)
  ])

; ---- imports: `use A\B\C;` -> A\B\C (groups expanded in parse.py); literal require/include
(namespace_use_clause
  .
  [(name) (qualified_name)] @import)

(require_expression
  [
    (string) @import
    (encapsed_string) @import
    (parenthesized_expression [(string) (encapsed_string)] @import)
    (binary_expression
      left: (name) @_dir
      right: [(string) (encapsed_string)] @import.dir
      (#eq? @_dir "__DIR__"))
  ])

(require_once_expression
  [
    (string) @import
    (encapsed_string) @import
    (parenthesized_expression [(string) (encapsed_string)] @import)
    (binary_expression
      left: (name) @_dir
      right: [(string) (encapsed_string)] @import.dir
      (#eq? @_dir "__DIR__"))
  ])

(include_expression
  [
    (string) @import
    (encapsed_string) @import
    (parenthesized_expression [(string) (encapsed_string)] @import)
    (binary_expression
      left: (name) @_dir
      right: [(string) (encapsed_string)] @import.dir
      (#eq? @_dir "__DIR__"))
  ])

(include_once_expression
  [
    (string) @import
    (encapsed_string) @import
    (parenthesized_expression [(string) (encapsed_string)] @import)
    (binary_expression
      left: (name) @_dir
      right: [(string) (encapsed_string)] @import.dir
      (#eq? @_dir "__DIR__"))
  ])
