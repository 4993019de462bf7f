// expect: - division
// options: --size N=8
// via: callable
// namespace: {"A": ["int32", [8]], "B": ["int32", [8], "zeros"], "C": ["int32", [8]]}
void f(int N, int A[N], int B[N], int C[N]) {
  for (int i = 0; i < N; i++)
    C[i] = A[i] / B[i];
}
