; TypeScript additions to javascript.scm (typescript and tsx grammars).

; ---- definitions
(abstract_class_declaration
  name: (type_identifier) @name.definition.class)

(interface_declaration
  name: (type_identifier) @name.definition.interface)

(type_alias_declaration
  name: (type_identifier) @name.definition.type)

(enum_declaration
  name: (identifier) @name.definition.enum)

[
  (internal_module name: [(identifier) (nested_identifier)] @name.definition.module)
  (module name: [(identifier) (nested_identifier)] @name.definition.module)
]

(function_signature
  name: (identifier) @name.definition.function)

[
  (method_signature name: (property_identifier) @name.definition.method)
  (abstract_method_signature name: (property_identifier) @name.definition.method)
]

; ---- references
(type_identifier) @name.reference.type

(nested_type_identifier
  name: (type_identifier) @name.reference.type)

(implements_clause
  (type_identifier) @name.reference.class)

; ---- imports: `import x = require('./e')`
(import_require_clause source: (string) @import)

(extends_clause
  value: [
    (identifier) @name.reference.class
    (member_expression property: (property_identifier) @name.reference.class)
  ])
