// expect: - division
// options: --size N=8
// namespace: {"A": ["int64", [8]], "B": ["int64", [8], "zeros"], "C": ["int64", [8]]}
void f(int N, long A[N], long B[N], long C[N]) {
  for (int i = 0; i < N; i++)
    C[i] = A[i] % B[i];
}
