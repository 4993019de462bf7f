/* gemm.c: PolyBench/C 4.2 linear-algebra/blas/gemm, the kernel function as the suite
 * writes it, behind a copy of its header's macros (one dataset chosen with
 * MINI_DATASET, SMALL_DATASET or MEDIUM_DATASET; SMALL when none is). */
#if !defined(MINI_DATASET) && !defined(SMALL_DATASET) && !defined(MEDIUM_DATASET)
# define SMALL_DATASET
#endif

#if !defined(NI) && !defined(NJ) && !defined(NK)
# ifdef MINI_DATASET
#  define NI 20
#  define NJ 25
#  define NK 30
# endif
# ifdef SMALL_DATASET
#  define NI 60
#  define NJ 70
#  define NK 80
# endif
# ifdef MEDIUM_DATASET
#  define NI 200
#  define NJ 220
#  define NK 240
# endif
#endif

#define _PB_NI POLYBENCH_LOOP_BOUND(NI,ni)
#define _PB_NJ POLYBENCH_LOOP_BOUND(NJ,nj)
#define _PB_NK POLYBENCH_LOOP_BOUND(NK,nk)

#define DATA_TYPE double
#define DATA_PRINTF_MODIFIER "%0.2lf "
#define SCALAR_VAL(x) x
#define SQRT_FUN(x) sqrt(x)
#define EXP_FUN(x) exp(x)
#define POW_FUN(x,y) pow(x,y)

/* polybench.h's defaults: scalar loop bounds, constant-size arrays */
#define POLYBENCH_LOOP_BOUND(x,y) y
#define POLYBENCH_1D(var,dim1,ddim1) var[dim1]
#define POLYBENCH_2D(var,dim1,dim2,ddim1,ddim2) var[dim1][dim2]
#define POLYBENCH_3D(var,dim1,dim2,dim3,ddim1,ddim2,ddim3) var[dim1][dim2][dim3]

static
void kernel_gemm(int ni, int nj, int nk,
                 DATA_TYPE alpha,
                 DATA_TYPE beta,
                 DATA_TYPE POLYBENCH_2D(C,NI,NJ,ni,nj),
                 DATA_TYPE POLYBENCH_2D(A,NI,NK,ni,nk),
                 DATA_TYPE POLYBENCH_2D(B,NK,NJ,nk,nj))
{
  int i, j, k;

//BLAS PARAMS
//TRANSA = 'N'
//TRANSB = 'N'
// => Form C := alpha*A*B + beta*C,
//A is NIxNK
//B is NKxNJ
//C is NIxNJ
#pragma scop
  for (i = 0; i < _PB_NI; i++) {
    for (j = 0; j < _PB_NJ; j++)
      C[i][j] *= beta;
    for (k = 0; k < _PB_NK; k++) {
      for (j = 0; j < _PB_NJ; j++)
        C[i][j] += alpha * A[i][k] * B[k][j];
    }
  }
#pragma endscop

}
