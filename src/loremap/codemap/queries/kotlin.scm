; Kotlin tags (tree-sitter-grammars/tree-sitter-kotlin).
; Captures: @name.definition.<kind>, @name.reference.<kind>, @import.

; ---- definitions
(class_declaration
  name: (identifier) @name.definition.class)

(class_declaration
  "interface"
  name: (identifier) @name.definition.interface)

(class_declaration
  (modifiers (class_modifier) @_enum)
  name: (identifier) @name.definition.enum
  (#eq? @_enum "enum"))

(object_declaration
  name: (identifier) @name.definition.class)

(function_declaration
  name: (identifier) @name.definition.function)

(class_body
  (function_declaration
    name: (identifier) @name.definition.method))

(type_alias
  type: (identifier) @name.definition.type)

(source_file
  (property_declaration
    (variable_declaration (identifier) @name.definition.variable)))

(property_declaration
  (modifiers (property_modifier) @_const)
  (variable_declaration (identifier) @name.definition.constant)
  (#eq? @_const "const"))

; ---- references
(call_expression
  [
    (identifier) @name.reference.call
    (navigation_expression (identifier) @name.reference.call .)
  ])

(user_type
  (identifier) @name.reference.type)

; ---- imports: the dotted path, `.*` kept for wildcards, `as` aliases dropped
(import
  (qualified_identifier) @import)
