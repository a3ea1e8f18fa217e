{{/* The chart's name, and the release's full name (63 characters at most: a DNS label). */}}
{{- define "fusebox.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "fusebox.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "fusebox.selectorLabels" -}}
app.kubernetes.io/name: {{ include "fusebox.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* part-of is fixed: the ServiceMonitor takes the job label from it, and the alert rules read job="fusebox". */}}
{{- define "fusebox.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "fusebox.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: fusebox
{{- end -}}

{{- define "fusebox.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "fusebox.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the signing keys, or "" for unsigned commands. */}}
{{- define "fusebox.signingSecret" -}}
{{- if .Values.signing.existingSecret -}}
{{- .Values.signing.existingSecret -}}
{{- else if .Values.signing.keys -}}
{{- printf "%s-signing-keys" (include "fusebox.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/*
fusebox.bytes: a Kubernetes memory quantity (plain bytes, or with a
suffix k/Ki, M/Mi, G/Gi, T/Ti, decimals allowed) in bytes, as a float.
Plain bytes may be a number (`memory: 2147483648` in a values file is a
float64, which toString would write as 2.147483648e+09): it is written
out in full first. A quantity it cannot read fails the render, naming it.
*/}}
{{- define "fusebox.bytes" -}}
{{- $q := toString . -}}
{{- if or (kindIs "float64" .) (kindIs "int64" .) (kindIs "int" .) -}}
{{- $q = printf "%.0f" (float64 .) -}}
{{- end -}}
{{- $m := regexFind "^[0-9]+(\\.[0-9]+)?" $q -}}
{{- $unit := trimPrefix $m $q -}}
{{- $mult := dict "" 1 "k" 1000 "Ki" 1024 "M" 1000000 "Mi" 1048576 "G" 1000000000 "Gi" 1073741824 "T" 1000000000000 "Ti" 1099511627776 -}}
{{- if or (eq $m "") (not (hasKey $mult $unit)) -}}
{{- fail (printf "resources.limits.memory %q: want a quantity such as 2Gi, 1536Mi or 2G (GOMEMLIMIT is goMemLimitRatio of it)" $q) -}}
{{- end -}}
{{- mulf (float64 $m) (get $mult $unit) -}}
{{- end -}}

{{/* GOMEMLIMIT: goMemLimitRatio of the memory limit, in whole MiB; "" without a limit or with ratio 0. */}}
{{- define "fusebox.goMemLimit" -}}
{{- $limit := dig "limits" "memory" "" .Values.resources -}}
{{- $ratio := float64 .Values.goMemLimitRatio -}}
{{- if and $limit (gt $ratio 0.0) -}}
{{- if gt $ratio 1.0 -}}
{{- fail (printf "goMemLimitRatio %v: want a fraction of resources.limits.memory in (0, 1]" .Values.goMemLimitRatio) -}}
{{- end -}}
{{- $bytes := include "fusebox.bytes" $limit | float64 -}}
{{- printf "%dMiB" (int64 (floor (divf (mulf $bytes $ratio) 1048576))) -}}
{{- end -}}
{{- end -}}

{{/* fusebox's TLS section for a client (kafka or clickhouse) whose Secret is mounted at $dir. */}}
{{- define "fusebox.tlsConfig" -}}
{{- $t := .tls -}}
{{- $c := dict "enabled" true -}}
{{- if $t.existingSecret -}}
{{- if $t.caKey -}}{{- $_ := set $c "ca_file" (printf "%s/%s" .dir $t.caKey) -}}{{- end -}}
{{- if and $t.certKey $t.keyKey -}}
{{- $_ := set $c "cert_file" (printf "%s/%s" .dir $t.certKey) -}}
{{- $_ := set $c "key_file" (printf "%s/%s" .dir $t.keyKey) -}}
{{- else if or $t.certKey $t.keyKey -}}
{{- fail (printf "%s.tls: certKey and keyKey go together (mTLS), got certKey %q and keyKey %q" .name $t.certKey $t.keyKey) -}}
{{- end -}}
{{- end -}}
{{- if $t.serverName -}}{{- $_ := set $c "server_name" $t.serverName -}}{{- end -}}
{{- if $t.insecureSkipVerify -}}{{- $_ := set $c "insecure_skip_verify" true -}}{{- end -}}
{{- toYaml $c -}}
{{- end -}}

{{/*
fusebox.managedKeys: the config file's keys the chart sets from its
values ("path=value"). `config` must not set them: the chart's settings
are merged over `config` with mergeOverwrite, which does not overwrite
with false or empty (clickhouse.migrate=false would lose to
config.sinks.clickhouse.migrate: true), and a chart-managed key the
chart leaves unset (sinks.clickhouse with clickhouse.enabled=false) would
pass through unseen; so the render fails, naming the key and the value
to set instead.
*/}}
{{- define "fusebox.managedKeys" -}}
kafka.brokers=kafka.brokers
kafka.group=kafka.group
kafka.tls=kafka.tls
kafka.sasl=kafka.sasl
topics.keyed_partitions=kafka.keyedPartitions
sinks.clickhouse.addr=clickhouse.addr
sinks.clickhouse.database=clickhouse.database
sinks.clickhouse.username=clickhouse.username
sinks.clickhouse.password=clickhouse.existingSecret
sinks.clickhouse.password_env=clickhouse.existingSecret
sinks.clickhouse.tls=clickhouse.tls
sinks.clickhouse.migrate=clickhouse.migrate
signing.keys_file=signing.existingSecret
signing.keys_env=signing.existingSecret
signing.insecure_unsigned=signing.insecureUnsigned
http.listen=port
{{- end -}}

{{/* fusebox.refuseManaged fails the render when .Values.config sets a chart-managed key. */}}
{{- define "fusebox.refuseManaged" -}}
{{- $cfg := .Values.config -}}
{{- range $line := splitList "\n" (include "fusebox.managedKeys" .) -}}
{{- $kv := splitList "=" $line -}}
{{- $path := first $kv -}}
{{- $node := $cfg -}}
{{- $found := true -}}
{{- range $k := splitList "." $path -}}
{{- if and $found (kindIs "map" $node) (hasKey $node $k) -}}
{{- $node = get $node $k -}}
{{- else -}}
{{- $found = false -}}
{{- end -}}
{{- end -}}
{{- if $found -}}
{{- fail (printf "config.%s: set by the chart from the value %s; set that value instead (the chart's settings would not override it reliably: docs/kubernetes.md)" $path (last $kv)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The config file: .Values.config with the chart-managed settings on top (config may set none of them: fusebox.refuseManaged). */}}
{{- define "fusebox.config" -}}
{{- $v := .Values -}}
{{- include "fusebox.refuseManaged" . -}}
{{- if not $v.kafka.brokers -}}
{{- fail "kafka.brokers: set the seed brokers (host:port), e.g. --set kafka.brokers={kafka-0.kafka:9092}" -}}
{{- end -}}
{{- $kafka := dict "brokers" $v.kafka.brokers "group" $v.kafka.group -}}
{{- if $v.kafka.tls.enabled -}}
{{- $_ := set $kafka "tls" (include "fusebox.tlsConfig" (dict "tls" $v.kafka.tls "dir" "/etc/fusebox/kafka-tls" "name" "kafka") | fromYaml) -}}
{{- end -}}
{{- if $v.kafka.sasl.mechanism -}}
{{- if not (and $v.kafka.sasl.username $v.kafka.sasl.existingSecret) -}}
{{- fail "kafka.sasl: a mechanism needs username and existingSecret (the Secret holding the password)" -}}
{{- end -}}
{{- $_ := set $kafka "sasl" (dict "mechanism" $v.kafka.sasl.mechanism "username" $v.kafka.sasl.username "password_env" "FUSEBOX_KAFKA_PASSWORD") -}}
{{- end -}}
{{- $topics := dict "keyed_partitions" (int $v.kafka.keyedPartitions) -}}
{{- $sinks := dict -}}
{{- if $v.clickhouse.enabled -}}
{{- if not $v.clickhouse.addr -}}
{{- fail "clickhouse.addr: the ClickHouse sink needs its native-protocol addresses (host:port)" -}}
{{- end -}}
{{- $ch := dict "addr" $v.clickhouse.addr "database" $v.clickhouse.database "username" $v.clickhouse.username "migrate" $v.clickhouse.migrate -}}
{{- if $v.clickhouse.existingSecret -}}
{{- $_ := set $ch "password_env" "FUSEBOX_CLICKHOUSE_PASSWORD" -}}
{{- end -}}
{{- if $v.clickhouse.tls.enabled -}}
{{- $_ := set $ch "tls" (include "fusebox.tlsConfig" (dict "tls" $v.clickhouse.tls "dir" "/etc/fusebox/clickhouse-tls" "name" "clickhouse") | fromYaml) -}}
{{- end -}}
{{- $_ := set $sinks "clickhouse" $ch -}}
{{- end -}}
{{- $signing := dict -}}
{{- if include "fusebox.signingSecret" . -}}
{{- $_ := set $signing "keys_file" (printf "/etc/fusebox/keys/%s" $v.signing.secretKey) -}}
{{- else if $v.signing.insecureUnsigned -}}
{{- $_ := set $signing "insecure_unsigned" true -}}
{{- else -}}
{{- fail "signing: fusebox refuses to start without a fuse signing key: set signing.existingSecret (a Secret with the \"id:secret\" keys) or signing.keys, or signing.insecureUnsigned=true" -}}
{{- end -}}
{{- $managed := dict "kafka" $kafka "topics" $topics "sinks" $sinks "signing" $signing "http" (dict "listen" (printf "0.0.0.0:%d" (int $v.port))) -}}
{{- toYaml (mergeOverwrite (deepCopy $v.config) $managed) -}}
{{- end -}}
