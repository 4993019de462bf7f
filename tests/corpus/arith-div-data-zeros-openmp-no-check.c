// expect: - division
// options: --size N=1 --target openmp --no-check
// namespace: {"A": ["int32", [1]], "B": ["int32", [1], "zeros"], "C": ["int32", [1]]}
void f(int N, int A[N], int B[N], int C[N]) {
  for (int i = 0; i < N; i++)
    C[i] = A[i] / B[i];
}
