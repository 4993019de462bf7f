// expect: ok
// options: --size N=24
// namespace: {"A": ["float64", [24]], "B": ["float64", [24]]}
// via: magic
void abort(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = 2.0 * A[i] + 1.0;
}
